#!/bin/bash
# Build one kernel: [NOSIG=1] [NOVERITY=1] scripts/build.sh ours|upstream [DEBUG=0|1]
# Output: build/<kernel>[-debug][-nosig][-noverity]/bzImage (+ .config next to it).
# NOSIG=1 adds kernel/config/nosig.config: no built-in signatures.
# NOVERITY=1 adds kernel/config/noverity.config: no fs-verity at all.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${1:?usage: build.sh ours|upstream [0|1]}
debug=${2:-0}
case $kernel in ours|upstream) ;; *) echo "build: KERNEL must be ours or upstream" >&2; exit 2 ;; esac
suffix=; [ "$debug" = 1 ] && suffix=-debug
[ "${NOSIG:-0}" = 1 ] && suffix=$suffix-nosig
[ "${NOVERITY:-0}" = 1 ] && suffix=$suffix-noverity
name=$kernel$suffix
src=$top/build/src/$kernel
obj=$top/build/obj/$name
out=$top/build/$name
log=$top/build/logs/build-$name.log
frags="$top/kernel/config/base.config"
[ "$debug" = 1 ] && frags="$frags $top/kernel/config/debug.config"
[ "${NOSIG:-0}" = 1 ] && frags="$frags $top/kernel/config/nosig.config"
[ "${NOVERITY:-0}" = 1 ] && frags="$frags $top/kernel/config/noverity.config"

mkdir -p "$top/build/logs" "$obj" "$out"
# one kernel build at a time on this machine (tree.sh also runs under it)
exec 9>"$top/build/.lock"
if ! flock -n 9; then
	echo "build: waiting for another build (build/.lock)"
	flock 9
fi
export FSV_LOCKED=1

"$top/scripts/tree.sh"

# ccache (scripts/deps.sh installs it) through its gcc in /usr/lib/ccache:
# command lines stay "gcc", so switching it on or off rebuilds nothing, and
# a clean clone (CI) compiles only the sources that changed since the last
# build of the same kernel.  Paths are hashed relative to the repository.
if [ -x /usr/lib/ccache/gcc ] && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
	export PATH=/usr/lib/ccache:$PATH CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
fi
mk() { make -C "$src" O="$obj" ARCH=x86_64 "$@"; }

# files the config names relative to the object directory (see base.config:
# CONFIG_SYSTEM_TRUSTED_KEYS); cmp first, so an unchanged one keeps its mtime
for f in ipe-test-cert.pem; do
	cmp -s "$top/kernel/config/$f" "$obj/$f" || cp "$top/kernel/config/$f" "$obj/$f"
done

# (re)generate .config only when the fragments changed: keeps builds incremental
# shellcheck disable=SC2086
want=$(cat $frags | sha256sum | cut -d' ' -f1)
if [ ! -f "$obj/.config" ] || [ "$(cat "$obj/.fragments.sha" 2>/dev/null)" != "$want" ]; then
	echo "build: configuring $name (tinyconfig + $(for f in $frags; do basename "$f"; done | tr '\n' ' '))"
	{
		mk tinyconfig
		# shellcheck disable=SC2086
		(cd "$src" && scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" $frags)
		mk olddefconfig
	} >"$log" 2>&1 || { tail -n 40 "$log"; echo "build: configuring $name FAILED (see $log)" >&2; exit 1; }
	echo "$want" >"$obj/.fragments.sha"
fi

# every option the fragments ask for must really be in .config
check_config() {
	# shellcheck disable=SC2086
	awk -v cfg="$obj/.config" '
	function val(line,   v) {
		if (line ~ /^# CONFIG_[A-Za-z0-9_]+ is not set/) return "n"
		v = line; sub(/^[^=]*=/, "", v); return v
	}
	/^CONFIG_[A-Za-z0-9_]+=/ || /^# CONFIG_[A-Za-z0-9_]+ is not set/ {
		name = $0; sub(/^# /, "", name); sub(/[= ].*/, "", name)
		want[name] = val($0); from[name] = FILENAME; order[++n] = name
	}
	END {
		while ((getline line < cfg) > 0) {
			if (line ~ /^CONFIG_/ || line ~ /^# CONFIG_[A-Za-z0-9_]+ is not set/) {
				name = line; sub(/^# /, "", name); sub(/[= ].*/, "", name)
				have[name] = val(line)
			}
		}
		bad = 0
		for (i = 1; i <= n; i++) {
			o = order[i]
			if (o in seen) continue
			seen[o] = 1
			h = (o in have) ? have[o] : "n"
			w = want[o]; if (w == "") w = "n"
			if (h != w) {
				printf "build: CONFIG ERROR: %s wants %s=%s but .config has %s\n", from[o], o, w, (o in have) ? o "=" h : o " unset" > "/dev/stderr"
				bad = 1
			}
		}
		exit bad
	}' $frags
}
if ! check_config; then
	echo "build: $name: the .config does not honour kernel/config (see above); fix the fragment" >&2
	exit 1
fi

if [ "${CONFIG_ONLY:-0}" = 1 ]; then
	echo "build: $name: .config ok (build/obj/$name/.config)"
	exit 0
fi
echo "build: building $name (log: build/logs/build-$name.log)"
start=$(date +%s)
if ! mk -j2 bzImage >>"$log" 2>&1; then
	grep -E 'error|Error' "$log" | tail -n 30 || true
	tail -n 20 "$log"
	echo "build: $name FAILED to build (see $log)" >&2
	exit 1
fi
# a Kconfig change in the tree can re-resolve .config during make: check again
check_config
cp "$obj/arch/x86/boot/bzImage" "$out/bzImage.tmp" && mv "$out/bzImage.tmp" "$out/bzImage"
cp "$obj/.config" "$out/config"
echo "build: $name ok in $(( $(date +%s) - start ))s -> build/$name/bzImage"
