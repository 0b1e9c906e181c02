#!/usr/bin/env bash
# Builds the GPU worker here (release, CUDA on, warnings as errors) and packs
# what scripts/gpu_check.sh needs on a rented GPU machine (CUDA driver,
# CUDA and cuDNN as Python wheels, no network, no Debian packages) into one
# folder and a tarball beside it:
#
#   scripts/bundle_gpu.sh [OUT_DIR]        (default: gpu_bundle/, git-ignored)
#
#   OUT_DIR/bin/      coordinator, devmap_run_guard, worker_cpu, worker_gpu, cuda_tests, gpu_copy_bench (stripped)
#   OUT_DIR/lib/      every shared library they load that is not glibc's and not
#                     NVIDIA's (OpenBLAS, yaml-cpp, ZeroMQ and their dependencies;
#                     libstdc++ and libgcc_s in lib/cxx/); NVIDIA's come from the
#                     GPU machine (see gpu_check.sh)
#   OUT_DIR/configs/  every config of configs/ (cuda_tests' CudaWorkspace.* checks each)
#   OUT_DIR/data/     the Fashion-MNIST test set (t10k), which the check trains on
#   OUT_DIR/gpu_check.sh, OUT_DIR/MANIFEST.txt
#
# Then it dry-runs the bundle under `env -i`: every library but libcuda.so.1
# (the driver's, absent here) must resolve, and `worker_gpu --probe` must
# say "no usable GPU" on a machine without one. Fails when the tarball (what
# travels to the GPU machine) is over 40 MiB.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/gpu_bundle}
build=${DEVMAP_BUNDLE_BUILD_DIR:-$root/build/gpu-bundle}  # DEVMAP_BUNDLE_WERROR=OFF: warnings not errors
data=${DEVMAP_DATA_DIR:-/usr/share/datasets/fashion-mnist}
archs=${DEVMAP_CUDA_ARCHITECTURES:-80;90}
max_bytes=$((40 * 1024 * 1024))
bins=(coordinator devmap_run_guard worker_cpu worker_gpu cuda_tests gpu_copy_bench)

echo "== building in $build (CUDA architectures $archs)" >&2
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVMAP_ENABLE_CUDA=ON "-DDEVMAP_WERROR=${DEVMAP_BUNDLE_WERROR:-ON}" \
  -DDEVMAP_BUILD_BENCH=OFF "-DCMAKE_CUDA_ARCHITECTURES=$archs" >&2
nice cmake --build "$build" -j "${DEVMAP_BUNDLE_JOBS:-2}" --target "${bins[@]}" >&2

echo "== packing $out" >&2
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/configs" "$out/data"
for b in "${bins[@]}"; do
  cp "$build/bin/$b" "$out/bin/"
  strip --strip-unneeded "$out/bin/$b"
done

# Libraries left to the GPU machine: glibc's (its own loader must match) and
# NVIDIA's (the driver's libcuda; cuBLAS and cuDNN from its wheels).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libresolv\.|libutil\.|libcuda\.|libcublas|libcudnn|libcudart|libnvrtc|libnvJitLink)'
copy_deps() {
  ldd "$1" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [[ -e "$out/lib/$name" ]] && continue
    cp -L "$path" "$out/lib/$name"
    strip --strip-unneeded "$out/lib/$name" 2>/dev/null || true
    copy_deps "$path"
  done
}
for b in "${bins[@]}"; do copy_deps "$build/bin/$b"; done
# The C++ runtime goes aside: this machine's needs a newer glibc than some
# GPU machines have, and theirs usually serves; gpu_check.sh adds lib/cxx
# only when the machine's own libstdc++ is too old for the binaries.
mkdir -p "$out/lib/cxx"
for f in "$out"/lib/libstdc++.so.* "$out"/lib/libgcc_s.so.*; do [[ -e "$f" ]] && mv "$f" "$out/lib/cxx/"; done

cp "$root"/configs/*.yaml "$out/configs/"
cp "$data/t10k-images-idx3-ubyte.gz" "$data/t10k-labels-idx1-ubyte.gz" "$out/data/"
cp "$root/scripts/gpu_check.sh" "$out/"
chmod +x "$out/gpu_check.sh"

glibc_of() { for f in "$@"; do objdump -T "$f" 2>/dev/null; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1; }
glibc=$(glibc_of "$out"/bin/* "$out"/lib/*.so*)
glibc_cxx=$(glibc_of "$out"/lib/cxx/*)
{
  echo "devmap GPU bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "CUDA architectures: $archs; nvcc: $(nvcc --version | tail -1)"
  echo "needs on the GPU machine: an NVIDIA driver for CUDA >= $(nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2),"
  echo "  libcublas.so.13, libcublasLt.so.13 and libcudnn.so.9 (e.g. the nvidia-cublas and nvidia-cudnn-cu13 wheels),"
  echo "  glibc >= ${glibc#GLIBC_} (>= ${glibc_cxx#GLIBC_} when the bundled libstdc++ in lib/cxx is needed)"
  echo "files:"
  (cd "$out" && find . -type f | sort | while read -r f; do printf '  %8d  %s\n' "$(stat -c %s "$f")" "$f"; done)
} > "$out/MANIFEST.txt"

tarball="$out.tar.gz"
tar -C "$(dirname "$out")" -czf "$tarball" "$(basename "$out")"
size=$(stat -c %s "$tarball")
echo "== $tarball: $((size / 1024)) KiB (limit $((max_bytes / 1024)) KiB); unpacked $(du -sk "$out" | cut -f1) KiB" >&2
if (( size > max_bytes )); then
  echo "bundle_gpu.sh: the bundle is over 40 MiB" >&2
  exit 1
fi

echo "== dry run under env -i" >&2
status=0
for b in "${bins[@]}"; do
  missing=$(env -i LD_LIBRARY_PATH="$out/lib:$out/lib/cxx" ldd "$out/bin/$b" | grep 'not found' |
            grep -v -E 'libcuda\.so|libcublas|libcudnn' || true)
  nvidia=$(env -i LD_LIBRARY_PATH="$out/lib:$out/lib/cxx" ldd "$out/bin/$b" |
           grep -o -E '(libcublas[^ ]*|libcudnn[^ ]*|libcuda\.so[^ ]*)' | sort -u | tr '\n' ' ' || true)
  if [[ -n "$missing" ]]; then
    echo "  $b: unresolved: $missing" >&2
    status=1
  else
    echo "  $b: every library resolves except NVIDIA's, which the GPU machine provides: ${nvidia:-none}" >&2
  fi
done
# worker_gpu needs cuBLAS and cuDNN to start at all: point it at this machine's.
cuda_libs=$(dirname "$(ldconfig -p | awk '/libcublas\.so\.13 /{print $NF; exit}' || true)" 2>/dev/null || true)
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d $d ]] && cuda_libs="$cuda_libs:$d"; done
set +e
probe=$(env -i LD_LIBRARY_PATH="$out/lib:$out/lib/cxx:$cuda_libs" "$out/bin/worker_gpu" --probe 2>&1)
rc=$?
set -e
echo "$probe" | sed 's/^/  worker_gpu --probe: /' >&2
echo "  worker_gpu --probe exit status: $rc" >&2
if [[ $rc -ne 0 && $rc -ne 3 ]]; then status=1; fi
if [[ $rc -eq 3 ]] && ! grep -q "no usable GPU" <<< "$probe"; then status=1; fi
# The configs gpu_check.sh points cuda_tests at: every one of the source
# tree's, and the workspace test (no GPU needed) passes against them.
shipped=$(find "$root/configs" -maxdepth 1 -name '*.yaml' | wc -l)
bundled=$(find "$out/configs" -maxdepth 1 -name '*.yaml' | wc -l)
if [[ $shipped -ne $bundled ]]; then
  echo "  configs: the bundle has $bundled of the $shipped configs in configs/" >&2
  status=1
fi
set +e
workspace=$(env -i LD_LIBRARY_PATH="$out/lib:$out/lib/cxx:$cuda_libs" DEVMAP_CONFIG_DIR="$out/configs" \
  DEVMAP_BIN_DIR="$out/bin" "$out/bin/cuda_tests" --gtest_brief=1 --gtest_color=no '--gtest_filter=CudaWorkspace.*' 2>&1)
rc=$?
set -e
echo "$workspace" | tail -3 | sed 's/^/  cuda_tests CudaWorkspace.* (bundle configs): /' >&2
if [[ $rc -ne 0 ]]; then
  echo "  cuda_tests --gtest_filter=CudaWorkspace.* fails against the bundle's $bundled configs (exit status $rc)" >&2
  status=1
fi
exit $status
