"""A docker compose file with one single-node Elasticsearch per language (docs/elasticsearch.md).

Security is off (local use only), each node has its own heap, port, named data
volume and health check. ``clirmatrix compose --langs ...`` writes one for any
language list, so 139 languages need no hand editing; the repository's
``docker-compose.yml`` is this output for the 8 MULTI-8 languages.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

DEFAULT_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:8.15.3"
DEFAULT_BASE_PORT = 9200


def port_of(index: int, base_port: int = DEFAULT_BASE_PORT) -> int:
    """Host port of the ``index``-th language (in the given order): base, base + 1, ..."""
    return base_port + index


def service_name(lang: str) -> str:
    return f"es-{lang.lower().replace('_', '-')}"


def compose_spec(langs: Sequence[str] = MULTI8_LANGUAGES, heap: str = "1g", base_port: int = DEFAULT_BASE_PORT, image: str = DEFAULT_IMAGE) -> dict:
    """The compose document as a dict: one service and one volume per language."""
    if len(set(langs)) != len(langs):
        raise ValueError(f"languages repeat in {', '.join(langs)}")
    services, volumes = {}, {}
    for index, lang in enumerate(langs):
        name = service_name(lang)
        services[name] = {
            "image": image,
            "environment": {
                "discovery.type": "single-node",
                "xpack.security.enabled": "false",  # local use only; for a remote cluster see the README
                "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}",
                "cluster.name": f"clirmatrix-{lang}",
            },
            "ports": [f"127.0.0.1:{port_of(index, base_port)}:9200"],
            "volumes": [f"{name}-data:/usr/share/elasticsearch/data"],
            "ulimits": {"memlock": {"soft": -1, "hard": -1}},
            "healthcheck": {
                "test": ["CMD-SHELL", "curl -fs http://localhost:9200/_cluster/health?wait_for_status=yellow || exit 1"],
                "interval": "10s",
                "timeout": "5s",
                "retries": 30,
            },
        }
        volumes[f"{name}-data"] = {}
    return {"name": "clirmatrix", "services": services, "volumes": volumes}


def compose_yaml(langs: Sequence[str] = MULTI8_LANGUAGES, heap: str = "1g", base_port: int = DEFAULT_BASE_PORT, image: str = DEFAULT_IMAGE) -> str:
    """The compose file's text, with a header saying how it was made and which port serves which language."""
    ports = ", ".join(f"{lang}={port_of(i, base_port)}" for i, lang in enumerate(langs))
    header = (
        "# One single-node Elasticsearch per language, for `clirmatrix build --engine elasticsearch`.\n"
        f"# Written by: clirmatrix compose --langs {','.join(langs)} --heap {heap} --base-port {base_port}\n"
        f"# Ports: {ports}\n"
        "# Start: docker compose up -d   (security is off: bind to localhost only, as below)\n"
    )
    return header + yaml.safe_dump(compose_spec(langs, heap, base_port, image), sort_keys=False, allow_unicode=True, width=1000)
