#!/usr/bin/env bash
# Installs exactly the Debian packages ladder's build and tests need. Idempotent: when every package is
# already present it only runs dpkg-query and exits (well under a second).
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libgloo-dev           # trainer: LibTorch 1.13 (CPU) and the headers of its c10d Gloo backend
  libhdf5-dev                        # trainer: --data hdf5: (the HDF5 C library; each rank reads its own rows)
  libopenblas0-pthread               # trainer: the optimized BLAS behind LibTorch (libblas.so.3 alternative), ~10x the reference
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler   # the ladder.v1 API
  libboost-dev libboost-system-dev   # worker: Boost.Asio event loop, process groups, pipes
  libsqlite3-dev                     # server: the embedded store
  libssl-dev                         # TLS on every channel, `ladder certs create`, hashed tokens (OpenSSL)
  zlib1g-dev                         # worker: CRC-32 of staged files (ladder-stage); trainer: gzip'd CSVs
  libarchive-dev                     # ladder-stage: archives unpacked once per node (stage: extract: true)
  charliecloud-runtime               # tests: trials in a Charliecloud image (container: runtime: charliecloud; ch-run runs unprivileged)
  libyaml-cpp-dev                    # search: YAML specs with line/column marks
  libeigen3-dev                      # search: GP-BO linear algebra (Cholesky, L-BFGS on the kernel hyperparameters)
  libcli11-dev                       # cli and daemons: command-line parsing, --help
  nlohmann-json3-dev                 # metrics JSON lines, --json output
  libopenmpi-dev openmpi-bin          # trainer: the MPI backend (ranks started by mpirun/srun)
  libgtest-dev libgmock-dev          # tests
  clang libclang-rt-14-dev           # tests: the libFuzzer targets (scripts/fuzz.sh; -fsanitize=fuzzer,address,undefined)
  sqlite3                            # inspecting ./ladder.db by hand and in docs
  libncurses-dev                     # cli: ladder watch's full-screen view
  tmux                               # tests: ladder watch driven in a real terminal
  chromium fonts-dejavu-core         # tests: the web dashboard in a real (headless) browser
  python3-grpcio python3-protobuf    # examples/python and its test: the API from another language
  python3-torch                      # tests and examples/torchscript: models scripted by the PyTorch that matches LibTorch
  curl                               # bench/dashboard: browsers' event streams (curl -N), and the guide's API examples
  slurmctld slurmd slurm-client      # tests: a real 4-node Slurm cluster on this machine (tests/support/local_slurm.h)
  lmod                               # tests: the installed modulefiles, Lua and Tcl, loaded as a cluster user would
                                     #   (Debian's environment-modules conflicts with it; Lmod reads Tcl modulefiles too)
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done" >&2
