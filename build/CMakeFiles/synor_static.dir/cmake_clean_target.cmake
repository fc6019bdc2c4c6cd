file(REMOVE_RECURSE
  "libsynor.a"
)
