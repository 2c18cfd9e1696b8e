# Front door.  KERNEL=ours|upstream (default ours), DEBUG=1 for sanitizers,
# NOSIG=1 for a kernel without built-in signatures.
#   make run      boot ours with four verity filesystems (demo if no terminal)
#   make check    build, boot twice, one line per test, "N passed, N failed"
#   make bench    ours vs mainline, alternating boots (build/bench/)
#   make soak     long robustness runs: soak, hostile metadata, faults, power cuts
#   make series   export + verify the patch series (build/series/)
#   make kernel   just build build/$(KERNEL)[-debug]/bzImage
#   make xfsprogs Debian's xfsprogs + userspace/xfsprogs/*.patch (build/xfsprogs/)
KERNEL ?= ours
DEBUG ?= 0
export KERNEL DEBUG NOSIG TESTS FS

.PHONY: all run check series kernel initramfs xfsprogs bench soak deps clean

all: check

deps:
	scripts/deps.sh

kernel: deps
	scripts/build.sh $(KERNEL) $(DEBUG)

xfsprogs: deps
	scripts/xfsprogs.sh

initramfs: deps
	scripts/initramfs.sh

run: deps
	scripts/run.sh

check: deps
	scripts/check.sh

series: deps
	scripts/series.sh

bench: deps
	bench/run.sh

soak: deps
	scripts/soak.sh

clean:
	rm -rf build/obj build/ours build/upstream build/ours-debug \
		build/upstream-debug build/initramfs* build/tests-bin* \
		build/disks build/logs build/series build/compat \
		build/xfsprogs build/xfsprogs-src/src
