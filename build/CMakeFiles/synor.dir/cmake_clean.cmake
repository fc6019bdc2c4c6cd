file(REMOVE_RECURSE
  "CMakeFiles/synor.dir/src/cli/cmd_devices.c.o"
  "CMakeFiles/synor.dir/src/cli/cmd_devices.c.o.d"
  "CMakeFiles/synor.dir/src/cli/cmd_profiles.c.o"
  "CMakeFiles/synor.dir/src/cli/cmd_profiles.c.o.d"
  "CMakeFiles/synor.dir/src/cli/main.c.o"
  "CMakeFiles/synor.dir/src/cli/main.c.o.d"
  "synor"
  "synor.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/synor.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
