"""Drives scaleset-server through a client generated from docs/openapi.json by
openapi-python-client (see .ci/openapi): seeds credentials, an entity and three scale sets,
then lists the scale sets two to a page, following `next_cursor`, and checks the typed answer.

Usage: python openapi-client.py GENERATED_DIR BASE_URL TOKEN
"""

import sys

sys.path.insert(0, sys.argv[1])

from scaleset_client import AuthenticatedClient  # noqa: E402
from scaleset_client.api.credentials import create_credentials  # noqa: E402
from scaleset_client.api.entities import create_entity  # noqa: E402
from scaleset_client.api.scale_sets import create_scale_set, list_scale_sets  # noqa: E402
from scaleset_client.models import (  # noqa: E402
    AuthInputType0,
    AuthInputType0Kind,
    CreateCredentials,
    CreateEntity,
    CreateScaleSet,
    Credentials,
    EndpointInput,
    Entity,
    EntityKind,
    ScaleSet,
    ScaleSetList,
)


def check(answer, wanted_type, what):
    """The parsed body of a detailed answer, which must be of `wanted_type`."""
    if not isinstance(answer.parsed, wanted_type):
        sys.exit(
            f"{what}: HTTP {answer.status_code}, parsed as {type(answer.parsed).__name__}, "
            f"not {wanted_type.__name__}: {answer.content[:500]!r}"
        )
    return answer.parsed


base_url, token = sys.argv[2], sys.argv[3]
client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)

credentials = CreateCredentials(
    name="ci-pat",
    auth=AuthInputType0(token="ghp_not_a_real_token", kind=AuthInputType0Kind.PAT),
    # Loopback port 9 (discard): nothing answers there, and nothing leaves the machine.
    endpoint=EndpointInput(base_url="http://127.0.0.1:9", api_base_url="http://127.0.0.1:9"),
)
check(create_credentials.sync_detailed(client=client, body=credentials), Credentials, "create credentials")
entity = check(
    create_entity.sync_detailed(
        client=client,
        body=CreateEntity(kind=EntityKind.ORGANIZATION, name="acme", credentials="ci-pat"),
    ),
    Entity,
    "create entity",
)
names = ["gamma", "alpha", "beta"]
for name in names:
    created = check(
        create_scale_set.sync_detailed(
            client=client,
            body=CreateScaleSet(entity_id=entity.id, name=name, provider="fake", max_runners=2),
        ),
        ScaleSet,
        f"create scale set {name}",
    )
    assert created.spec.name == name, created

# Two to a page: three sets make two pages, the second ending the list.
listed, cursors, pages = [], [], 0
cursor = None
while True:
    kwargs = {"limit": 2} if cursor is None else {"limit": 2, "cursor": cursor}
    page = check(list_scale_sets.sync_detailed(client=client, **kwargs), ScaleSetList, "list scale sets")
    pages += 1
    assert all(isinstance(s, ScaleSet) for s in page.items), page.items
    listed += [s.spec.name for s in page.items]
    cursor = page.next_cursor
    if not cursor:
        break
    cursors.append(cursor)
    assert pages < 10, f"the list does not end: cursors {cursors}"

assert listed == sorted(names), f"listed {listed}, seeded {sorted(names)}"
assert pages == 2, f"{pages} pages of at most 2 for 3 scale sets"

# The default page holds all three, with no cursor.
whole = check(list_scale_sets.sync_detailed(client=client), ScaleSetList, "list scale sets")
assert [s.spec.name for s in whole.items] == sorted(names), whole.items
assert whole.next_cursor is None, whole.next_cursor
assert all(str(s.entity_id) == str(entity.id) for s in whole.items), whole.items
print(f"generated client: listed {listed} in {pages} pages of 2, then in one default page")
