#!/bin/sh
# SPDX-License-Identifier: MIT
# Threaded compressors and ciphers in the compatibility suite: 16 MiB of
# reproducible data through zstd -T2, pigz -p 2 and openssl enc (and back),
# with the checksums of what each wrote.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Half random (from a fixed key), half text: the text compresses.
head -c 8388608 /dev/zero | openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
    -iv 00000000000000000000000000000000 > data
seq 1 2000000 | head -c 8388608 >> data
sha256sum data
zstd -q -T2 -3 data -o data.zst
zstd -q -d -T2 data.zst -o data.unzst
pigz -p 2 -n -c data > data.gz
pigz -p 2 -d -c data.gz > data.ungz
openssl enc -aes-256-cbc -pbkdf2 -iter 1000 -S 0011223344556677 -pass pass:compat -in data -out data.enc
openssl enc -d -aes-256-cbc -pbkdf2 -iter 1000 -S 0011223344556677 -pass pass:compat -in data.enc -out data.unenc
sha256sum data.zst data.unzst data.gz data.ungz data.enc data.unenc
