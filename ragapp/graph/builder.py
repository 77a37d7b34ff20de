"""The graph, wired in one place."""

from __future__ import annotations

from functools import cache

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ragapp.graph import nodes, routes
from ragapp.graph.context import GraphContext
from ragapp.graph.state import RAGState
from ragapp.observability.instrument import ObservedStateGraph


def _after_grade_docs(state: RAGState, runtime: Runtime[GraphContext]):
    return routes.after_grade_docs(state, runtime.context.limits)


def _after_grade_answer(state: RAGState, runtime: Runtime[GraphContext]):
    return routes.after_grade_answer(state, runtime.context.limits)


def _after_refine(state: RAGState, runtime: Runtime[GraphContext]):
    return routes.after_refine(state, runtime.context.limits)


@cache
def build_graph(*, observed: bool = True):
    """Compile the self-correcting RAG graph (once per process; it holds no clients).

    `observed`: every node timed, traced and named in the logs (ragapp/observability); only
    bench/graph.py builds it without, to measure what that costs.
    """
    graph = ObservedStateGraph if observed else StateGraph
    return (
        graph(RAGState, context_schema=GraphContext)
        .add_node("condense", nodes.condense)
        .add_node("retrieve", nodes.retrieve)
        .add_node("grade_docs", nodes.grade_docs)
        .add_node("broaden_query", nodes.broaden_query)
        .add_node("generate", nodes.generate)
        .add_node("grade_answer", nodes.grade_answer)
        .add_node("refine_answer", nodes.refine_answer)
        .add_node("read_on", nodes.read_on)
        .add_conditional_edges(
            START, routes.start, {"condense": "condense", "retrieve": "retrieve"}
        )
        .add_edge("condense", "retrieve")
        .add_edge("retrieve", "grade_docs")
        .add_conditional_edges(
            "grade_docs",
            _after_grade_docs,
            {"generate": "generate", "broaden_query": "broaden_query"},
        )
        .add_edge("broaden_query", "retrieve")
        .add_conditional_edges(
            "generate", routes.after_generate, {"grade_answer": "grade_answer", "end": END}
        )
        .add_conditional_edges(
            "grade_answer",
            _after_grade_answer,
            {
                "answered": END,
                "refine_answer": "refine_answer",
                "read_on": "read_on",
                "refused": END,
            },
        )
        .add_conditional_edges(
            "refine_answer",
            _after_refine,
            {"grade_answer": "grade_answer", "read_on": "read_on", "refused": END},
        )
        .add_conditional_edges(
            "read_on", routes.after_read_on, {"generate": "generate", "refused": END}
        )
        .compile()
    )
