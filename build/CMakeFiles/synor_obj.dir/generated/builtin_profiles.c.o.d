CMakeFiles/synor_obj.dir/generated/builtin_profiles.c.o: \
 /work/main/build/generated/builtin_profiles.c /usr/include/stdc-predef.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h
