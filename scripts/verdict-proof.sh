#!/bin/bash
# Self-test of the pipeline: a deliberate guest FAIL, a real kernel WARNING
# (LKDTM, built in by base.config) during a passing test, and a test that
# hangs with its timeout disabled must each fail "make check".
# The broken tests exist only under build/proof-tests; output ->
# build/verdict-proof.txt.  Exits 0 when all three were caught.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/build/proof-tests
out=$top/build/verdict-proof.txt
mkdir -p "$dir"
# the broken tests never outlive this run
trap 'rm -rf "$dir" "$top"/build/initramfs-proof* "$top"/build/tests-bin-proof' EXIT
cat >"$dir/proof.c" <<'C'
#include <fcntl.h>
#include <unistd.h>
#include "lib.h"

TEST(guest_fail)
{
	fail("deliberate failure");
}

TEST(kernel_warning)	/* passes by itself: only the splat can fail it */
{
	int fd = CHECK_OK(open("/sys/kernel/debug/provoke-crash/DIRECT", O_WRONLY));

	CHECK(write(fd, "WARNING", 7) == 7);
	close(fd);
}

TEST_TIMEOUT(hang, -1)	/* no harness timeout: only the host's can end it */
{
	for (;;)
		pause();
}
C
KERNEL=${KERNEL:-upstream} EXTRA_TESTS=$dir TESTS=proof FS=ext4 CHECK_TIMEOUT=${CHECK_TIMEOUT:-60} \
	"$top/scripts/check.sh" 2>&1 | tee "$out" || true
ok=1
grep -q '^FAIL proof/ext4/guest_fail: deliberate failure' "$out" || ok=0
grep -q '^FAIL proof/ext4/kernel_warning: kernel splat: WARNING:' "$out" || ok=0
grep -q '^FAIL proof/ext4/hang: no result' "$out" || ok=0
tail -n 1 "$out" | grep -q ', [1-9][0-9]* failed$' || ok=0
if [ "$ok" = 1 ]; then
	echo "verdict-proof: all three failure modes failed the run, as they must" | tee -a "$out"
else
	echo "verdict-proof: a failure mode was NOT caught (see $out)" | tee -a "$out"
	exit 1
fi
