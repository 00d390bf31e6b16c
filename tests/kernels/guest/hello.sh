#!/bin/sh
# The smallest guest run: the boot itself works and the binaries load their libraries.
uname -r >"$OUT/uname.txt"
"$TT/tokentrace" --version >"$OUT/version.txt" 2>&1
"$TT/tokensim" --help >/dev/null 2>&1
echo "tokensim --help: $?" >>"$OUT/version.txt"
