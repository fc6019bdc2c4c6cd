
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/build/generated/builtin_profiles.c" "CMakeFiles/synor_obj.dir/generated/builtin_profiles.c.o" "gcc" "CMakeFiles/synor_obj.dir/generated/builtin_profiles.c.o.d"
  "/work/main/src/common/error.c" "CMakeFiles/synor_obj.dir/src/common/error.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/common/error.c.o.d"
  "/work/main/src/common/util.c" "CMakeFiles/synor_obj.dir/src/common/util.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/common/util.c.o.d"
  "/work/main/src/detect/cpu_x86.c" "CMakeFiles/synor_obj.dir/src/detect/cpu_x86.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/detect/cpu_x86.c.o.d"
  "/work/main/src/detect/detect.c" "CMakeFiles/synor_obj.dir/src/detect/detect.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/detect/detect.c.o.d"
  "/work/main/src/detect/host.c" "CMakeFiles/synor_obj.dir/src/detect/host.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/detect/host.c.o.d"
  "/work/main/src/detect/nvidia.c" "CMakeFiles/synor_obj.dir/src/detect/nvidia.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/detect/nvidia.c.o.d"
  "/work/main/src/detect/opencl.c" "CMakeFiles/synor_obj.dir/src/detect/opencl.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/detect/opencl.c.o.d"
  "/work/main/src/device/device.c" "CMakeFiles/synor_obj.dir/src/device/device.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/device/device.c.o.d"
  "/work/main/src/json/json_read.c" "CMakeFiles/synor_obj.dir/src/json/json_read.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/json/json_read.c.o.d"
  "/work/main/src/json/json_schema.c" "CMakeFiles/synor_obj.dir/src/json/json_schema.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/json/json_schema.c.o.d"
  "/work/main/src/json/json_write.c" "CMakeFiles/synor_obj.dir/src/json/json_write.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/json/json_write.c.o.d"
  "/work/main/src/processor/caps.c" "CMakeFiles/synor_obj.dir/src/processor/caps.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/processor/caps.c.o.d"
  "/work/main/src/processor/names.c" "CMakeFiles/synor_obj.dir/src/processor/names.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/processor/names.c.o.d"
  "/work/main/src/profile/catalog.c" "CMakeFiles/synor_obj.dir/src/profile/catalog.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/profile/catalog.c.o.d"
  "/work/main/src/profile/profile_json.c" "CMakeFiles/synor_obj.dir/src/profile/profile_json.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/profile/profile_json.c.o.d"
  "/work/main/src/profile/profile_parse.c" "CMakeFiles/synor_obj.dir/src/profile/profile_parse.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/profile/profile_parse.c.o.d"
  "/work/main/src/registry/availability.c" "CMakeFiles/synor_obj.dir/src/registry/availability.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/registry/availability.c.o.d"
  "/work/main/src/registry/registry.c" "CMakeFiles/synor_obj.dir/src/registry/registry.c.o" "gcc" "CMakeFiles/synor_obj.dir/src/registry/registry.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
