#!/bin/bash
# make series: export ours as a patch series against pristine
# (build/series/*.patch), prove it applies with git am to a fresh pristine
# worktree, and count checkpatch.pl --strict findings.
# SERIES_STRICT=1 also fails on any checkpatch error or warning.  Fixes:
# tags name mainline commits, which the pristine tree (a tarball, no
# history) cannot resolve: checkpatch's UNKNOWN_COMMIT_ID is left out.
# (Debian's python3 first in PATH: spdxcheck.py needs its python3-ply.)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
up=$top/build/src/upstream
out=$top/build/series
chk=$top/build/src/series-check

mkdir -p "$top/build"
exec 9>"$top/build/.lock"
flock 9
export FSV_LOCKED=1
"$top/scripts/tree.sh"

rm -rf "$out"
n=$(git -C "$up" rev-list --count refs/tags/pristine..ours)
if [ "$n" = 0 ]; then
	echo "series: ours == pristine, no patches"
	exit 0
fi
git -C "$up" format-patch -q --no-signature --cover-letter \
	refs/tags/pristine..ours -o "$out"
# the cover letter's subject and text from series/cover-letter.txt (first
# line, then the rest) and the union of the patches' Cc lines; format-patch
# supplies the shortlog and diffstat
cover=$out/0000-cover-letter.patch
{
	# dated like the commits (tree.sh fixes their dates), not "now"
	sed -n '1,/^Subject: /p' "$cover" | sed '$d' |
		sed "s/^Date: .*/Date: $(git -C "$up" log -1 --format=%aD ours)/"
	sed -n '/^Subject: /{s/\*\*\* SUBJECT HERE \*\*\*/'"$(head -n 1 "$top/series/cover-letter.txt" | sed 's/[\/&]/\\&/g')"'/;p;q}' "$cover"
	sed -n '/^Subject: /,/\*\*\* BLURB HERE \*\*\*/{/^Subject: /d;/BLURB HERE/d;p}' "$cover"
	tail -n +3 "$top/series/cover-letter.txt"
	# addressed to everyone a patch of the series is (once per address;
	# stable@ only gets the fix that asks for it)
	echo
	grep -h '^Cc: ' "$out"/*.patch | grep -v 'stable@vger' |
		awk '{ a = $NF } !(a in seen) { seen[a] = 1; print }' | LC_ALL=C sort
	sed -n '/\*\*\* BLURB HERE \*\*\*/,$p' "$cover" | tail -n +2
} >"$cover.new"
mv "$cover.new" "$cover"
echo "series: $n patches and a cover letter in build/series/:"
ls "$out" | sed 's/^/  /'

# the patches proper, without the cover letter
patches=()
for p in "$out"/*.patch; do
	[ "$p" = "$cover" ] || patches+=("$p")
done

# git am onto a fresh pristine checkout must give exactly the ours tree
# (-f -f: a killed "worktree add" leaves its worktree locked)
git -C "$up" worktree remove -f -f "$chk" 2>/dev/null || rm -rf "$chk"
git -C "$up" worktree prune
git -C "$up" worktree add -q --detach "$chk" refs/tags/pristine
cleanup() { git -C "$up" worktree remove --force "$chk" 2>/dev/null || rm -rf "$chk"; }
trap cleanup EXIT
if ! git -C "$chk" -c user.name=series -c user.email=series@localhost am -q "${patches[@]}"; then
	echo "series: FAILED: git am does not apply the series to pristine" >&2
	exit 1
fi
if [ "$(git -C "$chk" rev-parse 'HEAD^{tree}')" != "$(git -C "$up" rev-parse 'ours^{tree}')" ]; then
	echo "series: FAILED: git am gave a different tree than ours" >&2
	exit 1
fi
echo "series: git am onto pristine: ok (same tree as ours)"

# checkpatch asks "does MAINTAINERS need updating?" (FILE_PATH_CHANGES) of
# any patch that adds or deletes a file without touching MAINTAINERS.  The
# answer is no when pristine's MAINTAINERS already covers every such file
# (an F: line naming it or a directory above it, as fs/verity/ covers the
# core's files): then the question is left out for that patch, and stands
# for any other.
maintained() { # $1 = patch: 0 if pristine's MAINTAINERS covers its new and deleted files
	local f
	for f in $(awk '/^diff --git / { f = $3; sub(/^a\//, "", f) }
		/^(new|deleted) file mode/ { print f }' "$1"); do
		git -C "$up" show refs/tags/pristine:MAINTAINERS | awk -v f="$f" '
			/^F:\t/ { p = $2; if (p == f || (p ~ /\/$/ && index(f, p) == 1)) ok = 1 }
			END { exit !ok }' || return 1
	done
}

# the per-patch counts also go to build/logs/series-checkpatch.txt, for
# scripts/bisect.sh's report
mkdir -p "$top/build/logs"
cplog=$top/build/logs/series-checkpatch.txt
: >"$cplog"
errors=0 warnings=0 checks=0
for p in "${patches[@]}"; do
	ignore=UNKNOWN_COMMIT_ID
	! maintained "$p" || ignore=$ignore,FILE_PATH_CHANGES
	# from the git am checkout: build/src/upstream need not have a worktree
	res=$(cd "$chk" && PATH=/usr/bin:/bin:$PATH perl scripts/checkpatch.pl --strict --ignore "$ignore" --no-summary --terse --showfile "$p" 2>&1 || true)
	e=$(printf '%s\n' "$res" | grep -c ': ERROR:' || true)
	w=$(printf '%s\n' "$res" | grep -c ': WARNING:' || true)
	c=$(printf '%s\n' "$res" | grep -c ': CHECK:' || true)
	echo "checkpatch: $(basename "$p"): $e errors, $w warnings, $c checks" |
		tee -a "$cplog"
	[ -z "$res" ] || printf '%s\n' "$res" | sed 's/^/    /' | head -n 40
	errors=$((errors + e)) warnings=$((warnings + w)) checks=$((checks + c))
done
echo "checkpatch --strict: total $errors errors, $warnings warnings, $checks checks"
if [ "${SERIES_STRICT:-0}" = 1 ] && [ $((errors + warnings)) != 0 ]; then
	exit 1
fi
