#!/usr/bin/env bash
# Sets up a Debian 12 machine for mdl and builds it, then runs an example
# (`example`, the default), the whole test suite (`test`) or the benchmarks
# against their peers (`bench`).
#
#   tools/quickstart.sh example   # install what is missing, build, run examples/mlp.mdl
#   tools/quickstart.sh test      # install what is missing, build, run every test
#   tools/quickstart.sh bench     # also PyTorch; run bench/run_all.py (docs/performance.md)
#
# Missing Debian packages are installed with apt-get (as root, or through
# sudo). Nothing is downloaded from anywhere else.
set -euo pipefail

mode=${1:-example}
case "$mode" in
  example|test|bench) ;;
  *) echo "usage: $0 [example|test|bench]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Every package the build, the tests and the examples use; `.ci/run` checks
# the list against what a build really used (../shared/tools/check-packages.sh).
packages=(
  cmake ninja-build g++ make pkg-config       # the build
  antlr4 libantlr4-runtime-dev uuid-dev       # the grammar (the runtime links -luuid)
  llvm-19-dev llvm-19-tools libzstd-dev zlib1g-dev  # the JIT; lit and FileCheck for tests
  liblld-19-dev                               # GPU code generation: lld links AMDGPU code objects
  libopenblas-dev libomp-dev libdnnl-dev      # CPU kernels and GEMM
  libgtest-dev libbenchmark-dev               # unit tests, benchmarks
  nlohmann-json3-dev libcli11-dev libzip-dev  # JSON, the command line, .npz archives
  libssl-dev libasio-dev                      # the mpc device: TLS, certificates, channels
  libedit-dev                                 # mdl repl's line editing and history (BSD editline)
  opencl-c-headers                            # the GPU runtime's OpenCL types (libOpenCL is opened with dlopen)
  ocl-icd-libopencl1 pocl-opencl-icd          # hip segments run on the CPU through OpenCL (the gpu tests)
  libamdhip64-5                               # ROCm's HIP library: the gpu tests bind its entry points (no GPU needed)
  python3 python3-numpy                       # test drivers, example weights
  graphviz                                    # mdl graph -o g.svg
  dpkg-dev file                               # cpack's .deb (the package test)
)
# The benchmarks' peers (bench/peers.py, bench/real_models_*.py): about 650 MB
# that neither the build nor the tests need, so only `bench` installs them.
if [ "$mode" = bench ]; then
  packages+=(python3-torch python3-torchvision)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
echo "== configuring and building (build/, $jobs jobs)"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"

if [ "$mode" = example ]; then
  echo "== mdl check examples/mlp.mdl"
  build/bin/mdl check examples/mlp.mdl
  echo "== mdl run examples/mlp.mdl"
  build/bin/mdl run examples/mlp.mdl
elif [ "$mode" = test ]; then
  echo "== running the test suite"
  ctest --test-dir build --output-on-failure -j "$jobs" --timeout 1200
else
  echo "== running the benchmarks (bench/run_all.py writes docs/performance.md)"
  /usr/bin/python3 bench/run_all.py --mdl build/bin/mdl
fi
