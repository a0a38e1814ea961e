#!/bin/sh
# cargo-ok.sh CARGO MANIFEST: exit 0 when CARGO exists and its version is at
# least the rust-version of MANIFEST (the workspace's Cargo.toml); else print
# why the Rust targets are skipped, and how to get a cargo, and exit 1.
cargo=$1
manifest=$2
need=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$manifest")
if ! command -v "$cargo" >/dev/null 2>&1; then
    echo "SKIP (Rust): no '$cargo' on PATH; the Rust crates need cargo >= $need" \
         "(https://rustup.rs, or Debian's cargo where new enough)"
    exit 1
fi
have=$("$cargo" --version | awk '{print $2}')
low=$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)
if [ "$low" != "$need" ]; then
    echo "SKIP (Rust): $cargo $have is older than the crates' rust-version $need" \
         "(https://rustup.rs gives a current one)"
    exit 1
fi
exit 0
