"""The line naming the policy a comparison applied when none was given."""

from __future__ import annotations

from spanchor_core.policy import Policy
from spanchor_core.render.terminal import default_policy_line


def test_default_policy_line_names_every_limit() -> None:
    policy = Policy(max_drop={"recall@10": 0.0, "hit@5": 0.1}, aggregate={"recall@5": {}})
    assert default_policy_line(policy) == (
        "no policy given: hit@5 may drop by at most 0.1, recall@10 may not drop, "
        "mean recall@5 may not drop (default policy)"
    )
    assert default_policy_line(Policy()) is None
