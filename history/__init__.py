"""Context management: what a conversation may hold so every model request fits.

Below the nodes in the layering (it imports no node):

* ``markers``    — the convention for messages the framework writes (summary, feedback...)
* ``groups``     — units that are never split (a tool call with its results), what to keep
* ``digest``     — the deterministic digest and the summary message
* ``transcript`` — the bounded transcript and the model-written summary request
* ``shrink``     — archiving (reversible) and clipping of large texts
* ``budget``     — ``ContextBudget``: the size of the next request, the tools hook, the agent guard

The ``summarize`` node (nodes/summarize.py) and the loop's routes (nodes/routes.py) use it.
"""
