#!/usr/bin/env bash
# Prepares, on a Debian 12 (amd64) machine that reaches a Debian mirror, everything that
# bench/gpu/run.sh needs on a GPU machine that has only the CUDA toolkit, a C++ compiler
# and a shell -- no network and no Debian packages. Run from anywhere; writes, in the
# repository:
#
#   .gpu-deps/deps.tar.xz   the packages below, fetched with `apt-get download`,
#                           unpacked with `dpkg -x` into one tree (usr/...), trimmed
#   .gpu-deps/MANIFEST.txt  the packages and versions, what each part weighs, and the
#                           newest glibc symbol version the carried programs need
#
# .gpu-deps/ is ignored by git; it travels with the working tree to the GPU machine,
# where run.sh unpacks the archive into its build folder. What is carried:
#   build:  nlohmann-json3-dev, libcli11-dev, libstb-dev (headers only); libgtest-dev
#           (headers, static libraries, CMake config: cuda_tests); zlib1g-dev and zlib1g;
#           libopenblas-pthread-dev and libopenblas0-pthread with libgfortran5 and
#           libquadmath0 (the CPU backend is always built: OpenBLAS is linked and loaded)
#   tools:  ninja-build; cmake and cmake-data with every library cmake loads that is not
#           the C or C++ runtime (WITH_CMAKE=0 leaves them out, for a GPU machine that has
#           CMake >= 3.22)
#   data:   dataset-fashion-mnist, stored uncompressed so that xz packs it (the demo;
#           WITH_DATA=0 leaves it out)
# Google Benchmark is not carried: run.sh builds only plain programs.
#
# Shared libraries are found without LD_LIBRARY_PATH (which would reach the GPU
# machine's own compilers): cmake gets an RPATH to the carried libraries, OpenBLAS and
# libgfortran a RUNPATH to their neighbours ($ORIGIN), set with patchelf (fetched and
# run from a temporary folder, never installed). Absolute symbolic links are made
# relative and /lib is merged into /usr/lib, so the tree works wherever it is unpacked.
set -euo pipefail

cd "$(dirname "$0")/../.."
DEST=${DEST:-.gpu-deps}
WITH_CMAKE=${WITH_CMAKE:-1}
WITH_DATA=${WITH_DATA:-1}
ARCH=$(dpkg --print-architecture)
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debs=$work/debs
root=$work/tree
mkdir -p "$debs" "$root"

build_packages=(nlohmann-json3-dev libcli11-dev libstb-dev libgtest-dev zlib1g-dev zlib1g
                libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0)
tool_packages=(ninja-build)
# The C and C++ runtimes are the GPU machine's own (its compiler needs them).
system_packages='^(libc6|libstdc\+\+6|libgcc-s1)$'

download() {
  (cd "$debs" && apt-get -o APT::Sandbox::User=root download "$@") > "$work/apt.log" 2>&1 || {
    cat "$work/apt.log" >&2
    echo "apt-get download $* failed: is a Debian mirror reachable (apt-get update run once)?" >&2
    exit 1
  }
}

# The Debian packages holding the libraries that program $1 loads, other than the C and
# C++ runtimes (resolved on this machine, where the same packages are installed).
library_packages() {
  local missing
  missing=$(ldd "$1" | awk '/not found/ { print $1 }')
  if [ -n "$missing" ]; then
    echo "$1 needs libraries this machine lacks: $missing (install the package whose closure is carried)" >&2
    exit 1
  fi
  ldd "$1" | awk '$3 ~ /^\// { print $3 }' | while read -r library; do
    # dpkg knows each file under one of /lib and /usr/lib (usr-merged systems).
    real=$(readlink -f "$library")
    for candidate in "$library" "$real" "${real#/usr}" "/usr${real#/usr}"; do
      dpkg -S "$candidate" 2>/dev/null && break
    done || { echo "no package owns $library" >&2; exit 1; }
  done | sed 's/:.*//' | sort -u | grep -Ev "$system_packages" || true
}

echo "fetching the build packages"
download "${build_packages[@]}"
if [ "$WITH_CMAKE" = 1 ]; then
  echo "fetching cmake and the libraries it loads"
  download cmake cmake-data
  dpkg -x "$debs"/cmake_*.deb "$work/cmake-probe"
  cmake_libraries=$(library_packages "$work/cmake-probe/usr/bin/cmake")
  # shellcheck disable=SC2206  # one package name per line
  tool_packages+=($cmake_libraries)
fi
download "${tool_packages[@]}"
if [ "$WITH_DATA" = 1 ]; then
  download dataset-fashion-mnist
fi
download patchelf
mkdir -p "$work/patchelf"
dpkg -x "$debs"/patchelf_*.deb "$work/patchelf"
patchelf="$work/patchelf/usr/bin/patchelf"

for deb in "$debs"/*.deb; do
  case $(basename "$deb") in patchelf_*) continue ;; esac
  dpkg -x "$deb" "$root"
done

# usr-merge: /lib, /bin and /sbin go under /usr; then absolute links become relative.
for dir in lib bin sbin; do
  if [ -d "$root/$dir" ]; then
    mkdir -p "$root/usr/$dir"
    cp -a "$root/$dir/." "$root/usr/$dir/"
    rm -rf "${root:?}/$dir"
  fi
done
find "$root" -type l | while read -r link; do
  target=$(readlink "$link")
  case $target in /*) ;; *) continue ;; esac
  case $target in /lib/* | /bin/* | /sbin/*) target=/usr$target ;; esac
  [ -e "$root$target" ] || continue
  ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$root$target")" "$link"
done

# Debian's alternatives, which dpkg -x does not make: libopenblas.so(.0) beside the
# other libraries, where CMake's FindBLAS looks.
libdir=$root/usr/lib/$TRIPLET
ln -sfn openblas-pthread/libopenblas.so "$libdir/libopenblas.so"
ln -sfn openblas-pthread/libopenblas.so.0 "$libdir/libopenblas.so.0"

# Trim what no build or run needs.
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" \
  "$root/usr/share/bug" "$root/usr/share/bash-completion" "$root/usr/share/emacs" "$root/usr/share/vim" \
  "$root/usr/share/aclocal" "$root/usr/share/cmake-"*/Help "$root/usr/share/locale" "$root/usr/share/zsh" \
  "$root/usr/share/doc-base" "$root/etc"
# ICU's parts that libxml2 (cmake's libarchive) does not load.
rm -f "$libdir"/libicui18n.so* "$libdir"/libicuio.so* "$libdir"/libicutest.so* "$libdir"/libicutu.so*
find "$libdir/openblas-pthread" \( -name '*.a' -o -name 'libblas*' -o -name 'liblapack*' \) -exec rm -f {} +
rm -rf "$libdir/openblas-pthread/cmake" "$libdir/cmake/openblas"
if [ "$WITH_CMAKE" = 1 ]; then
  rm -f "$root/usr/bin/ctest" "$root/usr/bin/cpack"
fi

# Library lookup without LD_LIBRARY_PATH.
# $ORIGIN is the folder of the name the library was loaded by: the libopenblas.so.0 link
# beside libgfortran, or the file in openblas-pthread/ one level down.
"$patchelf" --set-rpath '$ORIGIN:$ORIGIN/..' "$libdir"/openblas-pthread/libopenblasp-r*.so
"$patchelf" --set-rpath '$ORIGIN' "$(readlink -f "$libdir/libgfortran.so.5")"
if [ "$WITH_CMAKE" = 1 ]; then
  "$patchelf" --force-rpath --set-rpath "\$ORIGIN/../lib/$TRIPLET" "$root/usr/bin/cmake"
fi

# Fashion-MNIST uncompressed (vitune reads .gz or not): xz packs it 4 MB smaller.
if [ "$WITH_DATA" = 1 ]; then
  gunzip "$root"/usr/share/datasets/fashion-mnist/*.gz
fi

glibc_needed=$(find "$root/usr" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec objdump -T {} + 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -n 1)

mkdir -p "$DEST"
echo "packing $(du -sh "$root" | cut -f1) into $DEST/deps.tar.xz"
XZ_OPT="-6 -T0" tar -C "$root" -cJf "$DEST/deps.tar.xz.tmp" usr
mv "$DEST/deps.tar.xz.tmp" "$DEST/deps.tar.xz"

{
  echo "Prepared by bench/gpu/prepare_deps.sh on $(date -u '+%Y-%m-%d %H:%M UTC') for $ARCH ($TRIPLET)."
  echo "Unpacked: $(du -sb "$root" | cut -f1) bytes; deps.tar.xz: $(stat -c %s "$DEST/deps.tar.xz") bytes."
  echo "Newest glibc symbol version needed by the carried programs and libraries: ${glibc_needed:-none}."
  echo
  echo "Unpacked bytes per part:"
  du -sb "$root/usr/include" "$libdir" "$root/usr/share/"* "$root/usr/bin" 2>/dev/null | sed "s|$root/||"
  echo
  echo "Packages:"
  for deb in "$debs"/*.deb; do
    case $(basename "$deb") in patchelf_*) continue ;; esac
    dpkg-deb -f "$deb" Package Version | paste -sd ' '
  done
} > "$DEST/MANIFEST.txt"
cat "$DEST/MANIFEST.txt"
