# Every external dependency, found the standard way, in one place.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# hwloc and UCX from Debian (libhwloc-dev, libucx-dev).
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx)

# LibTorch from the torch that Python imports, so the ABI and the NCCL match that process.
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c
          "import torch, torch.utils; print(torch.utils.cmake_prefix_path + ';' + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)) + ';' + (torch.version.cuda or ''))"
  OUTPUT_VARIABLE DOMINO_TORCH_QUERY
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE DOMINO_TORCH_QUERY_RESULT)
if(NOT DOMINO_TORCH_QUERY_RESULT EQUAL 0)
  message(FATAL_ERROR "torch is not importable by ${Python3_EXECUTABLE}; run scripts/setup.sh")
endif()
list(GET DOMINO_TORCH_QUERY 0 DOMINO_TORCH_PREFIX)
list(GET DOMINO_TORCH_QUERY 1 DOMINO_TORCH_CXX11_ABI)
list(LENGTH DOMINO_TORCH_QUERY DOMINO_TORCH_QUERY_LENGTH)
set(DOMINO_TORCH_CUDA "")
if(DOMINO_TORCH_QUERY_LENGTH GREATER 2)
  list(GET DOMINO_TORCH_QUERY 2 DOMINO_TORCH_CUDA)
endif()
list(APPEND CMAKE_PREFIX_PATH ${DOMINO_TORCH_PREFIX})
if(DOMINO_TORCH_CUDA)
  # TorchConfig looks for the toolkit through the CUDA language; point it at nvcc.
  find_program(DOMINO_NVCC nvcc PATHS /usr/local/cuda/bin)
  if(DOMINO_NVCC AND NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${DOMINO_NVCC})
  endif()
  # Naming the architectures skips TorchConfig's probe for an installed GPU (there may be none).
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
  endif()
endif()
find_package(Torch REQUIRED)
add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${DOMINO_TORCH_CXX11_ABI})
find_library(DOMINO_TORCH_PYTHON_LIBRARY torch_python PATHS "${TORCH_INSTALL_PREFIX}/lib" REQUIRED)

# CUDA and NCCL whenever torch is a CUDA build. NCCL is the copy torch itself loads (its
# nvidia-nccl wheel), so one process never holds two NCCL libraries.
set(DOMINO_WITH_CUDA OFF)
if(DOMINO_TORCH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
            "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])"
    OUTPUT_VARIABLE DOMINO_NCCL_ROOT
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE DOMINO_NCCL_QUERY_RESULT)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${DOMINO_NCCL_ROOT}/include REQUIRED NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${DOMINO_NCCL_ROOT}/lib REQUIRED NO_DEFAULT_PATH)
  add_library(Domino_NCCL SHARED IMPORTED GLOBAL)
  set_target_properties(Domino_NCCL PROPERTIES
    IMPORTED_LOCATION ${NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  set(DOMINO_WITH_CUDA ON)
  message(STATUS "domino: CUDA ${CUDAToolkit_VERSION}, NCCL ${NCCL_LIBRARY}")
endif()

if(DOMINO_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
