file(REMOVE_RECURSE
  "libsynor.a"
  "libsynor.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/synor_static.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
