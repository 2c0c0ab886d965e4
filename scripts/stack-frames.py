#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Reads `objdump -d` of an x86-64 object on stdin; prints the functions whose stack frame
(`sub $N,%rsp`) exceeds the byte limit given as the first argument.

usage: objdump -d rrxe.ko | stack-frames.py [LIMIT]   (LIMIT in bytes, default 2048)
"""
import re
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) > 2 or (len(sys.argv) == 2 and not sys.argv[1].isdigit()):
    sys.exit(__doc__.strip())

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
fn = None
for line in sys.stdin:
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        fn = m.group(1)
        continue
    m = re.search(r"sub\s+\$0x([0-9a-f]+),%rsp", line)
    if m and int(m.group(1), 16) > limit:
        print(f"{int(m.group(1), 16)} bytes: {fn}")
