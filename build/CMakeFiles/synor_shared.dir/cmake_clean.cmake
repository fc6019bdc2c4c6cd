file(REMOVE_RECURSE
  "libsynor.pdb"
  "libsynor.so"
  "libsynor.so.0"
  "libsynor.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/synor_shared.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
