"""An answer checked before it is given (docs/service.md, "5b. Verified answers and `grounded`"):
`verified_answer` verifies the draft against exactly the passages the model was given, applies
`GRASBOT_VERIFY_POLICY` (flag, drop, retry) and traces it.
"""

from __future__ import annotations

import logging
from typing import Any

from grasbot.answer.verify import Passage, verify
from grasbot.answer.verify_policy import NOT_IN_NOTES, drop_flagged, needs_fallback, retry_instructions
from grasbot.llm import LLMBackend, LLMError

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")


async def verified_answer(
    trace: Any,
    llm: LLMBackend | None,
    policy: str,
    passages: list[Passage],
    subjects: frozenset[str],
    messages: list[dict[str, str]],
    draft: str,
) -> tuple[str, dict[str, Any], bool, float | None]:
    """Verify `draft` against `passages` (those of the prompt), apply `policy`, and trace it (span
    `verification`, score `faithfulness`, tag `unsupported-claims`). Returns the answer to give, its
    verification (the JSON of `vaulttools verify`, plus `policy` and `removed`), the final `grounded` and
    the draft's faithfulness (the score's value).
    `retry` asks `llm` once more, with `messages` and the draft, to answer without the flagged sentences."""
    with trace.observation("verification", input={"policy": policy, "passages": [p.id for p in passages]}) as span:
        first = verify(draft, passages, subjects)
        checked, text = first, draft  # `checked` is always the verification of `text`
        retried = False
        if policy == "retry" and first.flagged() and llm is not None:
            retried = True
            again = [*messages, {"role": "assistant", "content": draft}, {"role": "user", "content": retry_instructions(first.flagged())}]
            try:
                second = await llm.chat(again)
            except LLMError as error:
                log.warning("verification retry failed (%s): the first answer is kept, dropped", error.code)
            else:
                if second.text:
                    text, checked = second.text, verify(second.text, passages, subjects)
        removed = [s.as_dict() for s in checked.flagged()] if policy != "flag" else []
        if removed:
            text = NOT_IN_NOTES if needs_fallback(checked) else (drop_flagged(text, checked) or NOT_IN_NOTES)
            checked = verify(text, passages, subjects)  # the offsets and labels of what is given
        grounded = checked.grounded
        body = {**checked.as_dict(), "policy": policy, "removed": removed}
        if retried:
            body["retried"] = True
        faithfulness = first.faithfulness
        if trace.enabled:
            span.update(
                output=body,
                metadata={"status_before_policy": first.status, "summary_before_policy": first.summary, "faithfulness": faithfulness},
            )
    if faithfulness is not None:
        trace.score("faithfulness", round(faithfulness, 4), "NUMERIC")
    if first.flagged():
        trace.add_tags(["unsupported-claims"])
    return text, body, grounded, faithfulness
