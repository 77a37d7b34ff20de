"""Structured outputs of the judges (the `structured` judge method).

The field order is deliberate: small models write the fields in order, so `reasoning` comes
first and the verdict is conditioned on it. With the verdict first we saw "relevant: true" next
to reasoning that said "not related".
"""

from typing import Literal

from pydantic import BaseModel, Field


class DocumentRelevance(BaseModel):
    """Does one document help answer the question? The seed's {score, relevant, reasoning}."""

    reasoning: str = Field(
        description="One or two sentences on whether the document contains information that "
        "answers the question."
    )
    relevant: bool = Field(description="true only if the document helps answer the question")
    score: float = Field(description="relevance from 0.0 (unrelated) to 1.0")


class AnswerFaithfulness(BaseModel):
    """Is every claim of the answer supported by the sources?"""

    reasoning: str = Field(description="Check the answer's claims against the sources, briefly.")
    problematic_claims: list[str] = Field(
        default_factory=list, description="claims in the answer that the sources do not support"
    )
    faithfulness_score: float = Field(
        description="share of the answer that the sources support, 0.0 to 1.0"
    )
    hallucination_risk: Literal["low", "medium", "high"]
    refinement_suggestion: str = Field(
        default="", description="how to fix the answer, if it needs fixing"
    )
