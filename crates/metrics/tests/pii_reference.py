"""Reference for crates/metrics/tests/pii_reference.rs: the PII detectors' checks against
python-stdnum 2.2.

Usage: python pii_reference.py < cases.json > results.json
One JSON document each way: {"luhn": [...], "iban": [...], "ssn": [...], "nir": [...]} of
strings in, the same keys with one boolean per string out.

- luhn: stdnum.luhn.is_valid.
- iban: stdnum.iban.is_valid(number, check_country=False): the registry's length and BBAN
  structure and ISO 7064 mod 97-10, without the national check digits some countries add.
- ssn: stdnum.us.ssn.is_valid.
- nir: stdnum.fr.nir.is_valid (form and key; no sex or month plausibility).
"""

import json
import sys

from stdnum import iban, luhn
from stdnum.fr import nir
from stdnum.us import ssn


def main():
    cases = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    out = {
        "luhn": [bool(luhn.is_valid(n)) for n in cases["luhn"]],
        "iban": [bool(iban.is_valid(n, check_country=False)) for n in cases["iban"]],
        "ssn": [bool(ssn.is_valid(n)) for n in cases["ssn"]],
        "nir": [bool(nir.is_valid(n)) for n in cases["nir"]],
    }
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
