# Front door.  KERNEL=ours|upstream (default ours), DEBUG=1 for sanitizers,
# NOSIG=1 for a kernel without built-in signatures, NOVERITY=1 without fs-verity.
#   make run      boot ours with four verity filesystems (demo if no terminal)
#   make check    the gate: ours built once, booted twice, the lint, a
#                 short power cut run; one line per test, "N passed, N failed"
#   make check-all  the gate, then the kernels without signatures and
#                 without fs-verity, the sanitized one, compat against
#                 mainline, the power cuts
#   make bench    ours vs mainline, alternating boots (build/bench/)
#   make soak     long robustness runs: soak, hostile metadata, faults, power cuts
#   make series   export + verify the patch series (build/series/);
#                 BISECT=1 also builds, sparse/W=1-checks and boots every patch
#   make kernel   just build build/$(KERNEL)[-debug]/bzImage
#   make xfsprogs Debian's xfsprogs + userspace/xfsprogs/*.patch (build/xfsprogs/)
KERNEL ?= ours
DEBUG ?= 0
export KERNEL DEBUG NOSIG NOVERITY TESTS FS ONLY

.PHONY: all run check check-all series kernel initramfs xfsprogs bench soak deps clean

all: check

deps:
	scripts/deps.sh

kernel: deps
	scripts/build.sh $(KERNEL) $(DEBUG)

# the initramfs carries our xfsprogs: every target that builds one builds it first
xfsprogs: deps
	scripts/xfsprogs.sh

initramfs: xfsprogs
	scripts/initramfs.sh

run: xfsprogs
	scripts/run.sh

# (both install the packages and build xfsprogs themselves, timed)
check:
	scripts/check.sh

check-all:
	scripts/check-all.sh

series: deps
	scripts/series.sh
	[ "$(BISECT)" != 1 ] || scripts/bisect.sh

bench: xfsprogs
	bench/run.sh

soak: xfsprogs
	scripts/soak.sh

clean:
	rm -rf build/obj build/ours build/upstream build/ours-debug \
		build/upstream-debug build/initramfs* build/tests-bin* \
		build/disks build/logs build/series build/compat \
		build/xfsprogs build/xfsprogs-src/src
