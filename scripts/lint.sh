#!/bin/bash
# Code-quality gates for our fs-verity, as test verdict lines for make check:
#   lint/series      make series: the series git-ams onto pristine and
#                    checkpatch.pl --strict finds no error and no warning
#   lint/sparse-w1   fs/verity/ and the other files our patches add code to
#                    (XFS's fs-verity, iomap's buffered I/O, tmpfs's and
#                    shmem's) rebuilt with
#                    sparse (C=2) and W=1: no warning
#   lint/kernel-doc  scripts/kernel-doc -Wall: no warning, every export documented
# Needs build/ours already built (check.sh builds it first).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
log=$top/build/logs/lint.log
mkdir -p "$top/build/logs"

echo "RUN lint/series"
if SERIES_STRICT=1 "$top/scripts/series.sh" >"$log" 2>&1; then
	echo "PASS lint/series"
else
	grep -E 'FAILED|ERROR|WARNING|total' "$log" | head -n 20 | sed 's/^/# /'
	echo "FAIL lint/series: checkpatch or git am (build/logs/lint.log)"
fi

echo "RUN lint/sparse-w1"
exec 9>"$top/build/.lock"
flock 9
# touch nothing in the tree: force the recheck by removing the objects
ours_objs="fs/xfs/xfs_fsverity.o fs/iomap/buffered-io.o mm/shmem_verity.o mm/shmem.o"
rm -f "$top"/build/obj/ours/fs/verity/*.o
for o in $ours_objs; do rm -f "$top/build/obj/ours/$o"; done
# shellcheck disable=SC2086
if ! make -C "$top/build/src/ours" O="$top/build/obj/ours" ARCH=x86_64 -j2 \
	C=2 W=1 fs/verity/ $ours_objs >"$log.sparse" 2>&1; then
	tail -n 20 "$log.sparse" | sed 's/^/# /'
	echo "FAIL lint/sparse-w1: fs/verity does not build (build/logs/lint.log.sparse)"
elif grep -E '(fs/(verity/|xfs/xfs_fsverity|iomap/)|mm/shmem).*(warning|error):' "$log.sparse" >/dev/null; then
	grep -E '(fs/(verity/|xfs/xfs_fsverity|iomap/)|mm/shmem).*(warning|error):' "$log.sparse" | head -n 20 | sed 's/^/# /'
	echo "FAIL lint/sparse-w1: warnings in fs/verity (build/logs/lint.log.sparse)"
else
	echo "PASS lint/sparse-w1"
fi

# kernel-doc: no warning anywhere in our code, and a comment for every
# exported function
echo "RUN lint/kernel-doc"
src=$top/build/src/ours
cd "$src"
docs=$(perl scripts/kernel-doc -none -Wall fs/verity/*.[ch] \
	include/linux/fsverity.h include/uapi/linux/fsverity.h 2>&1)
exported=$(cat fs/verity/*.c | grep -c '^EXPORT_SYMBOL' || true)
documented=$(perl scripts/kernel-doc -rst -export fs/verity/*.c 2>/dev/null |
	grep -c '^\.\. c:function::' || true)
if [ -n "$docs" ]; then
	echo "$docs" | head -n 20 | sed 's/^/# /'
	echo "FAIL lint/kernel-doc: scripts/kernel-doc warns on fs/verity"
elif [ "$exported" != "$documented" ]; then
	echo "FAIL lint/kernel-doc: $exported exported functions, $documented with kernel-doc"
else
	echo "PASS lint/kernel-doc: $documented exported functions documented"
fi
