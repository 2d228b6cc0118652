"""schemathesis hooks of scripts/contract.sh (docs/api.md, "The OpenAPI document").

The I-9 routes act on I-9s that scripts/contract.sh inserts in the scratch
database, one per step in the status the step starts from; their ids come in
CONTRACT_I9_*. A case whose path `id` was generated valid gets its
operation's I-9 instead, so it reaches the body checks and the state machine
rather than a 404; an `id` generated invalid (not an integer, or out of range)
is sent as generated, so the 404 the document states for it is still checked.
(A fixed value through the configuration's `parameters` would replace the
invalid ids too, and the negative_data_rejection check would then read the
answer to a valid request as one to an invalid one.)
"""

import os

import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode

# The operation (its label) -> the environment variable holding its I-9's id.
I9_OF = {
    "GET /v1/i9s/{id}": "CONTRACT_I9_SECTION2",
    "POST /v1/i9s/{id}/section2": "CONTRACT_I9_SECTION2",
    "POST /v1/i9s/{id}/complete": "CONTRACT_I9_COMPLETE",
    "POST /v1/i9s/{id}/approve": "CONTRACT_I9_APPROVE",
    "POST /v1/i9s/{id}/park": "CONTRACT_I9_PARK",
    # Read-only: the history of the read's I-9.
    "GET /v1/i9s/{id}/history": "CONTRACT_I9_SECTION2",
    # A new Section 1 link leaves the status as it is (Section 1 Incomplete):
    # the park's I-9 answers 200 until it is parked, 409 after.
    "POST /v1/i9s/{id}/section1-link": "CONTRACT_I9_PARK",
}


def point(case):
    """Give the case its operation's I-9, unless its path `id` was generated invalid."""
    variable = I9_OF.get(case.operation.label)
    if variable is None or not case.path_parameters or "id" not in case.path_parameters:
        return case
    path = case.meta.components.get(ParameterLocation.PATH) if case.meta else None
    if path is not None and path.mode is GenerationMode.NEGATIVE:
        return case
    case.path_parameters["id"] = int(os.environ[variable])
    return case


@schemathesis.hook
def map_case(context, case):
    """The cases of the coverage, fuzzing and stateful phases."""
    return point(case)


@schemathesis.hook
def before_add_examples(context, examples):
    """The cases of the examples phase (valid, built from the document's examples)."""
    for case in examples:
        point(case)
