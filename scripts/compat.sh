#!/bin/bash
# Differential compatibility suite (issue 5): ours vs the pristine kernel vs
# the host's fsverity-utils, on one fixed corpus (tests/compat.c lists it).
#   scripts/compat.sh   (called by check.sh; FS="ext4 f2fs" narrows it;
#                        COMPAT_SKIP_BUILD=1 uses the bzImages as they are)
# Boots, on the same disks (build/disks/compat):
#   1 upstream: mkfs, enable set A          2 ours: read A, enable B, read all
#   3 upstream: read B
# and checks the images on the host after every boot (e2fsck -fn, fsck.f2fs
# --dry-run, btrfs check --readonly, xfs_repair -n, the verity flag per file
# via debugfs / dump.f2fs / btrfs dump-tree / xfs_db), then compares every
# measurement of every file across the kernels and with the host.
# XFS (xfs, xfs-1k) is two-way, ours against the host only: mainline 6.12
# has no XFS fs-verity (it mounts a verity XFS read-only), so there ours
# alone enables set B and reads it, and the upstream boots leave XFS alone.
# Prints PASS/FAIL/SKIP lines and a summary line per filesystem ("three-way"
# or "two-way"); exit status 1 if anything failed.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
work=$top/build/compat
disks=$top/build/disks/compat
logs=$top/build/logs
timeout=${COMPAT_TIMEOUT:-1500}
fsarg=
[ -z "${FS:-}" ] || fsarg="fsv.fs=$(echo "$FS" | tr ' ' ',')"
mkdir -p "$work" "$logs"
# one run at a time: the disks and the corpus under build/ are shared
exec 8>"$work/.lock"
if ! flock -n 8; then
	echo "compat: waiting for another compat run (build/compat/.lock)"
	flock 8
fi
failed=0
verdict() { # PASS|FAIL|SKIP name [reason]
	echo "$1 $2${3:+: $3}"
	[ "$1" != FAIL ] || failed=1
}
wanted_fs() { [ -z "${FS:-}" ] || case " $FS " in *" $1 "*) ;; *) return 1 ;; esac; }
# the filesystems mainline 6.12 has no fs-verity on (tests/compat.c: two_way)
two_way_fs="xfs xfs-1k"
two_way() { case " $two_way_fs " in *" $1 "*) ;; *) return 1 ;; esac; }
# our xfsprogs (scripts/xfsprogs.sh, built by initramfs.sh): the host's own
# does not know the verity feature and inode flag
xfs_repair=$top/build/xfsprogs/sbin/xfs_repair
xfs_db=$top/build/xfsprogs/usr/sbin/xfs_db

# ---- kernels (ours and upstream, never the debug ones) and the initramfs ----
for k in ours upstream; do
	[ "${COMPAT_SKIP_BUILD:-0}" = 0 ] || [ ! -f "$top/build/$k/bzImage" ] || continue
	if ! "$top/scripts/build.sh" "$k" 0 >"$work/build-$k.out" 2>&1; then
		cat "$work/build-$k.out" >&2
		verdict FAIL "compat/build/$k" "the kernel does not build (build/logs/build-$k.log)"
		exit 1
	fi
done
if ! "$top/scripts/initramfs.sh" >"$work/initramfs.out" 2>&1; then
	cat "$work/initramfs.out" >&2
	verdict FAIL compat/build/initramfs "the tests or the initramfs do not build"
	exit 1
fi
initrd=$top/build/initramfs.cpio.gz

# ---- the corpus: manifest + host digests + signatures (cached by content) ----
host=$work/compat-host
stamp=$(cat "$top/tests/compat.c" "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$work/payload.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$work/payload.tar" ]; then
	echo "compat: computing the corpus on the host (fsverity digest/sign)"
	gcc -O2 -Wall -Wextra -Werror -DCOMPAT_HOST -o "$host" "$top/tests/compat.c"
	rm -rf "$work/payload" "$work/tmp"
	mkdir -p "$work/payload/sig" "$work/tmp"
	# a throw-away signing key; its cert goes into the guests' .fs-verity
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 \
		-keyout "$work/tmp/key.pem" -out "$work/tmp/cert.pem" \
		-subj "/O=fs-verity test suite/CN=fs-verity compat key" 2>/dev/null
	openssl x509 -in "$work/tmp/cert.pem" -outform der -out "$work/payload/cert.der"
	"$host" corpus >"$work/corpus.txt"
	{
		echo "# name fs size pattern seed alg bs salt sig digest tree_sha256 desc_sha256 content_sha256"
		while read -r name fs size pat seed alg bs salt sig; do
			f=$work/tmp/data
			"$host" write "$f" "$size" "$pat" "$seed"
			opts=("--hash-alg=sha$alg" "--block-size=$bs")
			[ "$salt" = - ] || opts+=("--salt=$salt")
			d=$(fsverity digest "${opts[@]}" --compact \
				--out-merkle-tree="$work/tmp/tree" --out-descriptor="$work/tmp/desc" "$f")
			if [ "$sig" = 1 ]; then
				fsverity sign "${opts[@]}" --key="$work/tmp/key.pem" \
					--cert="$work/tmp/cert.pem" "$f" "$work/payload/sig/$name" >/dev/null
			fi
			echo "$name $fs $size $pat $seed $alg $bs $salt $sig $d" \
				"$(sha256sum <"$work/tmp/tree" | cut -d' ' -f1)" \
				"$(sha256sum <"$work/tmp/desc" | cut -d' ' -f1)" \
				"$(sha256sum <"$f" | cut -d' ' -f1)"
			rm -f "$f"
		done <"$work/corpus.txt"
	} >"$work/payload/manifest.txt"
	tar -C "$work/payload" -cf "$work/payload.tar" manifest.txt cert.der sig
	rm -rf "$work/tmp"
	echo "$stamp" >"$work/payload.stamp"
fi
manifest=$work/payload/manifest.txt
echo "compat: corpus: $(grep -vc '^#' "$manifest") files," \
	"$(awk '!/^#/ { s += $3 } END { printf "%.0f", s / 1048576 }' "$manifest") MiB," \
	"$(awk '!/^#/ && $9 == 1' "$manifest" | wc -l) signed"

# ---- the images, checked on the host after each boot ----
# fsck_images <tag>: every image passes its fsck; every file of the listed
# sets has the verity flag where the tool shows it
fsck_images() {
	local tag=$1 out
	shift
	for fs in ext4 ext4-1k f2fs btrfs xfs xfs-1k; do
		wanted_fs "$fs" || continue
		case $fs in
		ext4) img=$disks/vda.img ;; ext4-1k) img=$disks/vdb.img ;;
		f2fs) img=$disks/vdc.img ;; btrfs) img=$disks/vdd.img ;;
		xfs) img=$disks/vdf.img ;; xfs-1k) img=$disks/vdg.img ;;
		esac
		case $fs in
		ext4*) cmd=(e2fsck -fn "$img") ;;
		f2fs)	# on a copy: -f may write (dry-run should stop it; be sure)
			cp --sparse=always "$img" "$work/f2fs-copy.img"
			cmd=(fsck.f2fs -f --dry-run "$work/f2fs-copy.img") ;;
		btrfs) cmd=(btrfs check --readonly "$img") ;;
		xfs*) cmd=("$xfs_repair" -n -f "$img") ;;
		esac
		rc=0; out=$("${cmd[@]}" 2>&1) || rc=$?
		rm -f "$work/f2fs-copy.img"
		if [ "$rc" = 0 ] && ! echo "$out" | grep -q '\[Fail\]\|\[FAIL\]'; then
			verdict PASS "compat/$fs/fsck-$tag"
		else
			echo "$out" | tail -n 15 | sed 's/^/# /'
			verdict FAIL "compat/$fs/fsck-$tag" "${cmd[0]} finds errors (above)"
		fi
		# the verity flag of every file enabled so far, as the tool sees it
		files=$(awk -v fs="$fs" -v sets="$*" '
			$2 == fs && $5 == "ok" && ($1 == "up-enable-A" || $1 == "ours-enable-B") {
				set = substr($1, length($1)); if (index(sets, set)) print set, $3, $4 }' \
			"$work/out-all.txt" | sort -u)
		[ -n "$files" ] || continue
		n=$(echo "$files" | wc -l) detail=
		case $fs in
		ext4*)
			out=$(echo "$files" | awk '{ print "stat /compat-" $1 "/" $2 }' |
				debugfs -f - "$img" 2>/dev/null | sed -n 's/^Inode:.*Flags: \(0x[0-9a-f]*\).*/\1/p')
			good=0
			for f in $out; do (( f & 0x100000 )) && good=$((good + 1)); done
			what="debugfs stat: Flags has EXT4_VERITY_FL (0x100000)"
			;;
		f2fs)
			good=0
			while read -r _ name ino; do
				# "i_advise  [0x      40 : 64]"; FADVISE_VERITY_BIT is 0x40
				adv=$(dump.f2fs -i "$ino" "$img" 2>/dev/null </dev/null |
					sed -n 's/^i_advise.*\[0x *\([0-9a-f]*\) :.*/\1/p' | head -n 1)
				if [ -n "$adv" ] && (( 0x$adv & 0x40 )); then
					good=$((good + 1))
				else
					detail="$detail $name(i_advise=$adv)"
				fi
			done <<<"$files"
			what="dump.f2fs -i: i_advise has FADVISE_VERITY (0x40)"
			;;
		btrfs)
			out=$(btrfs inspect-internal dump-tree -t 5 "$img" 2>/dev/null |
				awk '/key \([0-9]+ VERITY_DESC_ITEM/ { sub(/.*key \(/, ""); print $1 }' | sort -u)
			good=$(echo "$files" | awk -v have="$(echo "$out" | tr '\n' ' ')" '
				BEGIN { n = split(have, h, " "); for (i = 1; i <= n; i++) v[h[i]] = 1 }
				$3 in v { c++ } END { print c + 0 }')
			what="btrfs dump-tree: a VERITY_DESC_ITEM per inode"
			;;
		xfs*)
			# one xfs_db for all: "v3.verity = 1" per inode, in order
			args=()
			while read -r _ _ ino; do
				args+=(-c "inode $ino" -c "print v3.verity")
			done <<<"$files"
			out=$("$xfs_db" -r "${args[@]}" "$img" 2>&1 || true)
			good=$(echo "$out" | grep -c '^v3\.verity = 1$' || true)
			[ "$good" = "$n" ] || detail=" $(paste -d' ' <(echo "$files" | cut -d' ' -f2) \
				<(echo "$out") | grep -v ' v3\.verity = 1$' | head -n 20 | tr '\n' ';')"
			what="xfs_db print v3.verity: XFS_DIFLAG2_VERITY (our xfs_db's field)"
			;;
		esac
		if [ "$good" = "$n" ]; then
			verdict PASS "compat/$fs/verity-flag-$tag"
		else
			[ -z "$detail" ] || echo "# compat/$fs/verity-flag-$tag:$detail" | cut -c1-800
			verdict FAIL "compat/$fs/verity-flag-$tag" "$what: only $good of $n files"
		fi
	done
}

# ---- the three boots ----
rm -rf "$disks"
mkdir -p "$disks"
: >"$work/out-all.txt"
kernels=(x upstream ours upstream)
sets=(x A AB AB)
for phase in 1 2 3; do
	k=${kernels[$phase]}
	log=$logs/compat-$phase-$k.log
	# vde: the payload at 0, the guest's results at 768 MiB
	rm -f "$disks/vde.img"
	cp "$work/payload.tar" "$disks/vde.img"
	truncate -s 1G "$disks/vde.img"
	echo "compat: boot $phase ($k) (console: build/logs/$(basename "$log"), timeout ${timeout}s)"
	start=$(date +%s)
	rc=0
	"$top/scripts/qemu.sh" "$top/build/$k/bzImage" "$initrd" "$disks" "$log" \
		check "$phase" "$timeout" "fsv.tests=compat fsv.compat=$phase $fsarg" || rc=$?
	echo "compat: boot $phase ($k) took $(( $(date +%s) - start ))s$([ "$rc" = 124 ] && echo ", TIMED OUT")"
	# the runner's verdicts; its setup/fsck steps get a compat/ prefix
	while read -r line; do
		case $line in
		"PASS compat/"* | "FAIL compat/"* | "SKIP compat/"*) echo "$line" ;;
		*) echo "$line" | sed -E "s#^(PASS|FAIL|SKIP) #\1 compat/boot$phase-$k/#" ;;
		esac
		case $line in FAIL*) failed=1 ;; esac
	done < <(awk -v boot="compat$phase" -v splats="$top/scripts/splats" -f "$top/scripts/splats.awk" -f "$top/scripts/parse-log.awk" "$log")
	grep '^# compat/' "$log" | tr -d '\r' || true
	dd if="$disks/vde.img" bs=1M skip=768 count=64 status=none | tr -d '\0' \
		>"$work/out-$phase.txt"
	cat "$work/out-$phase.txt" >>"$work/out-all.txt"
	fsck_images "after-boot$phase-$k" "${sets[$phase]}"
done

# ---- every measurement of every file: host == upstream == ours ----
# (three-way), or host == ours on XFS (two-way: no fs-verity upstream)
# The metadata (Merkle tree, descriptor, signature) is compared where a
# kernel answers FS_IOC_READ_VERITY_METADATA.  Mainline 6.12's btrfs does
# not wire it: ENOTTY to both the tree and the descriptor there is "not
# comparable", counted on a line of its own, not a disagreement.  Ours
# wires it while kernel/patches/btrfs-verity-read-metadata.patch is in the
# series, so an ENOTTY from ours is then a disagreement like any other.
ours_wires_btrfs_md=0
[ ! -f "$top/kernel/patches/btrfs-verity-read-metadata.patch" ] || ours_wires_btrfs_md=1
for fs in ext4 ext4-1k f2fs btrfs xfs xfs-1k; do
	wanted_fs "$fs" || continue
	# every file has a result from each of these steps (tests/compat.c)
	if two_way "$fs"; then
		kind=two-way tags="ours-enable-B ours-read-B"
		who="host fsverity digest and ours; mainline 6.12 has no XFS fs-verity"
	else
		kind=three-way
		tags="up-enable-A ours-read-A ours-enable-B ours-read-B ours-reread-A up-read-B"
		who="host fsverity digest, upstream, ours; both directions"
	fi
	res=$(awk -v fs="$fs" -v ours_wires="$ours_wires_btrfs_md" -v tagl="$tags" '
		FNR == NR { if ($0 !~ /^#/ && $2 == fs) { order[++n] = $1; d[$1] = $10; t[$1] = $11; s[$1] = $12 } next }
		$2 != fs { next }
		{
			name = $3; seen[name, $1] = 1
			kern = $1 ~ /^up-/ ? "upstream" : "ours"
			na = fs == "btrfs" && $7 == "ENOTTY" && $8 == "ENOTTY"
			why = ""
			if ($5 != "ok") why = $1 ": " $5
			else if ($6 != d[name]) why = $1 ": digest " $6 " != host " d[name]
			else if (na && kern == "ours" && ours_wires) why = $1 ": ENOTTY from ours, whose series wires FS_IOC_READ_VERITY_METADATA on btrfs"
			else if (!na && $7 != t[name]) why = $1 ": Merkle tree sha256 " $7 " != host " t[name]
			else if (!na && $8 != s[name]) why = $1 ": descriptor sha256 " $8 " != host " s[name]
			else if ($9 != 1) why = $1 ": signature read back differs"
			if (why != "" && !(name in bad)) bad[name] = why
			# the same kernel-visible result from every kernel; the
			# metadata where both answer
			if ($5 == "ok") {
				if (!(name in first)) first[name] = $6; else if (first[name] != $6) bad[name] = "digests differ between kernels"
				if (na) nacount[kern]++
				else {
					cmpcount[kern]++
					if (!(name in firstmd)) firstmd[name] = $7 " " $8
					else if (firstmd[name] != $7 " " $8 && !(name in bad)) bad[name] = "metadata differs between kernels"
				}
			}
		}
		END {
			if (nacount["upstream"] + nacount["ours"])
				printf "NOTCOMPARABLE %d %d %d %d\n", nacount["upstream"], nacount["ours"], cmpcount["upstream"], cmpcount["ours"]
			ntags = split(tagl, tags, " ")
			for (i = 1; i <= n; i++) {
				name = order[i]
				for (j = 1; j <= ntags; j++)
					if (!((name, tags[j]) in seen) && !(name in bad)) bad[name] = "no result from " tags[j]
				if (name in bad) { dis++; if (dis <= 25) print "# " name ": " bad[name] }
				else agree++
			}
			printf "SUMMARY %d %d %d\n", n, agree + 0, dis + 0
		}' "$manifest" "$work/out-all.txt")
	echo "$res" | grep '^#' | sed "s|^# |# compat/$fs/$kind: |" || true
	read -r _ n agree dis <<<"$(echo "$res" | grep '^SUMMARY')"
	nc=
	if echo "$res" | grep -q '^NOTCOMPARABLE'; then
		read -r _ na_up na_ours cmp_up cmp_ours <<<"$(echo "$res" | grep '^NOTCOMPARABLE')"
		echo "compat: $fs: metadata not comparable in $((na_up + na_ours)) reads" \
			"(ENOTTY: upstream $na_up, ours $na_ours; that kernel's $fs has no" \
			"FS_IOC_READ_VERITY_METADATA), compared in $((cmp_up + cmp_ours))" \
			"(upstream $cmp_up, ours $cmp_ours)"
		nc="metadata not comparable in $((na_up + na_ours)) reads (ENOTTY: upstream $na_up, ours $na_ours)"
	fi
	echo "compat: $fs: $n files, $agree agreeing, $dis disagreeing ($who)"
	if [ "$n" -gt 0 ] && [ "$dis" = 0 ]; then
		verdict PASS "compat/$fs/$kind" "$nc"
	else
		verdict FAIL "compat/$fs/$kind" "$dis of $n files disagree (details above; build/compat/out-*.txt)"
	fi
done
exit $failed
