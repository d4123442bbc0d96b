#!/bin/sh
# SPDX-License-Identifier: MIT
# git in the compatibility suite: a repository of its own with fixed names
# and dates (so the hashes are the same on every run), commits, a threaded
# repack and grep, log and fsck.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GIT_AUTHOR_NAME=compat GIT_AUTHOR_EMAIL=compat@example.org GIT_COMMITTER_NAME=compat \
       GIT_COMMITTER_EMAIL=compat@example.org GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' \
       GIT_COMMITTER_DATE='2020-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1 HOME="$work"
git init -q -b main repo
cd repo
i=0
while [ $i -lt 20 ]; do
    seq 1 $((i * 200 + 100)) | sed "s/^/file $i line /" > "f$i.txt"
    git add "f$i.txt"
    git commit -q -m "commit $i"
    i=$((i + 1))
done
git repack -q -a -d -f --threads=2
git -c grep.threads=2 grep -c 'line 77$' | sort
git log --format='%H %s' | head -3
git fsck --no-progress 2>&1
git count-objects -v | grep -v size
