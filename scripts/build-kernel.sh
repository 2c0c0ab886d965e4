#!/usr/bin/env bash
# Builds (once) the Rust-enabled guest kernel from Debian's linux-source-6.12 with
# tinyconfig + qemu/kernel.config, into $RRXE_CACHE/kernel-<key>, where <key> hashes the
# source version, the config fragment, this script and the toolchain versions.
# A finished build leaves a stamp file; a later call with the same key returns at once.
set -euo pipefail
. "$(dirname "$0")/env.sh"

stamp=$RRXE_KBUILD/.done
if [ -f "$stamp" ]; then
  echo "kernel: cached at $RRXE_KBUILD"
  exit 0
fi
tarball=$(ls /usr/src/linux-source-6.12.tar.xz)
mkdir -p "$RRXE_CACHE"
rm -rf "$RRXE_KBUILD.tmp"
mkdir -p "$RRXE_KBUILD.tmp"
start=$(date +%s)
echo "kernel: unpacking $tarball"
tar -xJf "$tarball" -C "$RRXE_KBUILD.tmp"
mv "$RRXE_KBUILD.tmp/linux-source-6.12" "$RRXE_KBUILD.tmp/linux"
cd "$RRXE_KBUILD.tmp/linux"
make "${KMAKE_FLAGS[@]}" tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "$RRXE_ROOT/qemu/kernel.config" >/dev/null
make "${KMAKE_FLAGS[@]}" olddefconfig >/dev/null
# Every option the fragment asks for must survive olddefconfig.
bad=0
while IFS= read -r line; do
  case "$line" in
    CONFIG_*=*)
      opt=${line%%=*}; want=${line#*=}
      [ "$want" = n ] && { grep -q "^$opt=" .config && { echo "kernel: $opt should be off"; bad=1; }; continue; }
      grep -qx "$opt=$want" .config || { echo "kernel: $opt=$want did not survive olddefconfig: $(grep "^$opt=" .config || echo unset)"; bad=1; } ;;
    "# CONFIG_"*" is not set")
      opt=${line#\# }; opt=${opt%% *}
      grep -q "^$opt=" .config && { echo "kernel: $opt should be off"; bad=1; } ;;
  esac
done < "$RRXE_ROOT/qemu/kernel.config"
[ "$bad" = 0 ] || { echo "kernel: config fragment not honoured"; exit 1; }
make "${KMAKE_FLAGS[@]}" rustavailable
echo "kernel: building (this takes ~15-20 min on 2 cores)"
make "${KMAKE_FLAGS[@]}" -j"$(( $(nproc) + 1 ))" bzImage modules > build.log 2>&1 || { tail -n 60 build.log; exit 1; }
make "${KMAKE_FLAGS[@]}" INSTALL_MOD_PATH="$RRXE_KBUILD.tmp/modroot" modules_install > /dev/null
cd /
rm -rf "$RRXE_KBUILD"
mv "$RRXE_KBUILD.tmp" "$RRXE_KBUILD"
end=$(date +%s)
echo "$((end - start))" > "$RRXE_KBUILD/build-seconds"
touch "$stamp"
echo "kernel: built in $((end - start)) s at $RRXE_KBUILD"
