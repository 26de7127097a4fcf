#!/usr/bin/python3
"""Check a Lazaret checkpoint without Lazaret: rebuild the message it signs from
its JSON (the layout in docs/checkpoints.md) and hand it to openssl.

usage: checkpoint-verify.py CHECKPOINT.json PUBLIC_KEY OUTDIR
  CHECKPOINT.json  one checkpoint line (a witness file, or a line of checkpoints.jsonl)
  PUBLIC_KEY       the base64 public key `lazaret ledger keygen` printed
Writes OUTDIR/msg (the signed message), OUTDIR/sig (the raw signature) and
OUTDIR/pub.pem, then:  openssl pkeyutl -verify -pubin -inkey OUTDIR/pub.pem -rawin -in OUTDIR/msg -sigfile OUTDIR/sig
"""
import base64, json, os, struct, sys

if len(sys.argv) != 4:
    sys.exit(__doc__)
c = json.loads(open(sys.argv[1], "rb").read())
text = lambda s: struct.pack(">Q", len(s.encode())) + s.encode()  # length (8 bytes, big-endian), then UTF-8
num = lambda n: struct.pack(">Q", n)  # 8 bytes, big-endian
msg = (b"lazaret/premis-checkpoint/1\0" + text(c["ledger"]) + text(c["status"]) + num(c["count"]) + num(c["seq"])
       + text(c["hash"]) + text(c["time"]) + text(c.get("problem", "")))
out = sys.argv[3]
open(os.path.join(out, "msg"), "wb").write(msg)
open(os.path.join(out, "sig"), "wb").write(base64.b64decode(c["sig"]))
# An ed25519 SubjectPublicKeyInfo is these 12 bytes, then the 32-byte key.
der = bytes.fromhex("302a300506032b6570032100") + base64.b64decode(sys.argv[2])
open(os.path.join(out, "pub.pem"), "w").write(
    "-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(der).decode() + "\n-----END PUBLIC KEY-----\n")
