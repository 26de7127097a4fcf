#!/usr/bin/python3
"""Apply an ISO Schematron to an XML document and print each failed assert.

usage: schematron.py SCHEMATRON DOCUMENT

Prints one line per failed assert (its location, then its text) and exits 1
if any failed, 0 if none, 2 if the schematron or the document cannot be
read. Needs lxml (Debian python3-lxml; run with /usr/bin/python3).
"""
import sys

from lxml import etree, isoschematron

SVRL = "{http://purl.oclc.org/dsdl/svrl}"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        schema = isoschematron.Schematron(etree.parse(argv[1]), store_report=True)
        doc = etree.parse(argv[2])
    except (OSError, etree.Error) as err:
        print("schematron.py: %s" % err, file=sys.stderr)
        return 2
    schema.validate(doc)
    failed = schema.validation_report.iter(SVRL + "failed-assert")
    n = 0
    for fa in failed:
        n += 1
        text = " ".join("".join(fa.itertext()).split())
        print("%s: %s" % (fa.get("location"), text))
    fired = sum(1 for _ in schema.validation_report.iter(SVRL + "fired-rule"))
    print("%d failed asserts, %d rules fired" % (n, fired), file=sys.stderr)
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
