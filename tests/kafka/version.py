"""The Apache Kafka version under test: ``kafka.version`` in ``tests/kafka/pom.xml``.

Everything that names the release (the broker fixture, the jars the spec tests read,
docker-compose's image, checked by ``tests/compose``) takes it from here, so a Kafka
upgrade is that one property (and ``make kafka``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

POM = Path(__file__).with_name("pom.xml")
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


@cache
def kafka_version() -> str:
    version = ET.parse(POM).getroot().findtext("m:properties/m:kafka.version", namespaces=_NS)
    if not version:
        raise RuntimeError(f"{POM} sets no <kafka.version>")
    return version.strip()
