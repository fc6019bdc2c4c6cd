file(REMOVE_RECURSE
  "CMakeFiles/json_check.dir/json_check.c.o"
  "CMakeFiles/json_check.dir/json_check.c.o.d"
  "json_check"
  "json_check.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/json_check.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
