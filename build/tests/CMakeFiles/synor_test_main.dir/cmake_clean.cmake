file(REMOVE_RECURSE
  "CMakeFiles/synor_test_main.dir/test_main.c.o"
  "CMakeFiles/synor_test_main.dir/test_main.c.o.d"
  "libsynor_test_main.a"
  "libsynor_test_main.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/synor_test_main.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
