#!/usr/bin/env bash
# Packs what run.sh needs on a lent machine into .dev16/ (git-ignored through
# .git/info/exclude), for the device tool to carry: PostgreSQL 15's binaries from this
# machine with every library they load and this machine's loader (so that they run
# whatever the other machine's libc), zoneinfo/UTC, an empty cluster initdb'd here, the
# stripped release build of meridian, and run.sh. About 50 MB.
#
#   cargo build --release && bench/pgbench-split-cpus/pack.sh
#   then, with the device tool: run `bash .dev16/run.sh` carrying .dev16
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
pg=/usr/lib/postgresql/15
stage=$(mktemp -d) && chmod 755 "$stage"  # initdb runs as postgres below
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/root/{lib,bin,zoneinfo,usr/lib/postgresql,usr/share/postgresql}
cp -a $pg "$stage/root/usr/lib/postgresql/"
cp -a /usr/share/postgresql/15 "$stage/root/usr/share/postgresql/"
cp /usr/bin/taskset /usr/bin/setpriv "$stage/root/bin/"
for binary in $pg/bin/{postgres,pgbench,psql} /usr/bin/taskset /usr/bin/setpriv; do
    ldd "$binary" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | sort -u | while read -r lib; do cp -L "$lib" "$stage/root/lib/"; done
cp -L /usr/share/zoneinfo/UTC "$stage/root/zoneinfo/"
out=$repo/.dev16
rm -rf "$out" && mkdir -p "$out"
tar cf - -C "$stage/root" . | xz -T1 -6 >"$out/root.tar.xz"
# initdb refuses root: run it as the postgres user that Debian's package creates.
mkdir -p "$stage/cluster" && chown postgres "$stage/cluster"
su postgres -s /bin/sh -c "LC_ALL=C.UTF-8 $pg/bin/initdb -D $stage/cluster/pgdata -U postgres -A trust \
    --encoding=UTF8 --locale=C.UTF-8" >/dev/null
tar cf - -C "$stage/cluster" pgdata | xz -T1 -6 >"$out/pgdata.tar.xz"
strip -o "$out/meridian" "$repo/target/release/meridian"
cp "$(dirname "$0")/run.sh" "$out/"
exclude=$(git -C "$repo" rev-parse --path-format=absolute --git-path info/exclude)  # a worktree too
mkdir -p "$(dirname "$exclude")"
grep -qx '/.dev16/' "$exclude" 2>/dev/null || echo '/.dev16/' >>"$exclude"
du -sh "$out"
