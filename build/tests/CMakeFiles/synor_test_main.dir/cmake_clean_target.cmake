file(REMOVE_RECURSE
  "libsynor_test_main.a"
)
