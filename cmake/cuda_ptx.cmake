# Compiles the CUDA element-wise kernels to PTX and embeds the PTX as a C
# string. nvcc is optional: when it fails (a toolkit without a working
# cicc, a sandbox without a writable temp dir) the build goes on with an
# empty PTX and the CUDA backend offers cuBLAS GEMM only.
# Run as: cmake -DNVCC=nvcc -DSRC=file.cu -DPTX=file.ptx -DOUT=file.c
#               -DSYMBOL=name -DEMBED=embed_file.cmake -P this
get_filename_component(dir ${PTX} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
file(REMOVE ${PTX})
execute_process(COMMAND ${NVCC} -ptx -arch=compute_75 -o ${PTX} ${SRC}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${PTX})
  message(WARNING "synor: nvcc could not compile ${SRC} (exit ${rc}): ${err}"
                  "the CUDA element-wise kernels are left out of this build")
  file(WRITE ${PTX} "")
endif()
set(IN ${PTX})
include(${EMBED})
