"""``ragjudge llm-judge``: an LLM grades the pool as one more annotator."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    BY_LEAD_HELP, MAX_DEPTH, MAX_LIMIT, access_of, console, err_console, open_project, print_json, reads_only, safe,
)
from ragjudge.cli.options import int_option
from ragjudge.cli.progress import QUIET_HELP, progress_bar
from ragjudge.errors import UsageError
from ragjudge.safetext import for_terminal, quote

EPILOG = (
    "The model answers through the chat-completions API (POST BASE_URL/chat/completions) that "
    "OpenAI, vLLM, Ollama and llama.cpp's server speak. It labels the pool in judging order as "
    "the annotator llm:MODEL (kind llm: its grades stay out of the gold qrels unless asked, "
    "e.g. 'ragjudge eval --rule annotator:llm:MODEL'). A pair it already graded is never sent "
    "again: running the command again continues where the last run stopped, and each grade is "
    "committed as it arrives (Ctrl-C keeps them). 429, 5xx and timeouts are retried with "
    "backoff (Retry-After honoured), then the pair is counted as failed and left for a later "
    "run; an answer without a grade of the scale is kept as unparsed, never as a grade. A "
    "refused key or an unreachable server stops at once. The key is read from the environment "
    "variable named by --api-key-env and is never printed or stored; each call's model, prompt "
    "SHA-256, answer, tokens and latency are ('ragjudge export labels --llm-audit').\n\n"
    "--prompt FILE takes a template with {query}, {description}, {chunk}, {scale} and "
    "{guidelines}; the answer is read from its last '##final score: N' line, or a bare "
    "number.\n\n"
    "--queue-order hardest|disagreement|off and --reveal-after-grading are project settings for "
    "human judging (both off by default); given alone they only set them. Both, and grading with "
    "a model (which adds it to the roster), are a lead's to do once the project has one (--by); "
    "--dry-run is anyone's. --queue-order settle is no setting: the model grades the pool in the "
    "settle order (first the pairs that most move the comparisons of the runs not settled yet; "
    "with --limit, the budget goes where it counts), and 'ragjudge settled' then reads its "
    "grades, calibrated against the people's, as evidence on the pairs nobody judged.\n\n"
    "Examples:\n\n"
    "  ragjudge llm-judge --base-url https://api.openai.com/v1 --model gpt-4o-mini --dry-run\n\n"
    "  ragjudge llm-judge --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b --queries q1,q2\n\n"
    "  ragjudge llm-judge --base-url http://127.0.0.1:11434/v1 --model llama3.1 --concurrency 2 "
    "--limit 200\n\n"
    "  ragjudge llm-judge --base-url ... --model m --prompt my-prompt.txt --temperature 0\n\n"
    "  ragjudge llm-judge --queue-order hardest --reveal-after-grading\n\n"
    "  ragjudge llm-judge --base-url ... --model m --queue-order settle --limit 500\n\n"
    "  ragjudge agree --verdict          # would the model rank the runs as people do?"
)


@app.command("llm-judge", epilog=EPILOG)
def llm_judge(
    base_url: Annotated[str | None, typer.Option("--base-url", help="The API's base URL, e.g. http://127.0.0.1:8000/v1.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model name the server knows.")] = None,
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="The environment variable holding the API key (optional for local servers).")] = "OPENAI_API_KEY",
    annotator: Annotated[str | None, typer.Option("--annotator", help="The annotator name the model labels under (default llm:MODEL).")] = None,
    runs: Annotated[str | None, typer.Option("--runs", help="Pool from these runs only (A,B); default all.")] = None,
    depth: Annotated[int, int_option("--depth", low=1, high=MAX_DEPTH, what="the pool depth", help="Pool depth K: the top K of each run per query.")] = 10,
    queries: Annotated[str | None, typer.Option("--queries", help="Only these queries: a file of ids or ID,ID,...")] = None,
    category: Annotated[str | None, typer.Option("--category", help="Only queries of this category.")] = None,
    limit: Annotated[int | None, int_option("--limit", low=1, high=MAX_LIMIT, what="the number of pairs to send", help="Send at most N pairs.")] = None,
    concurrency: Annotated[int, int_option("--concurrency", low=1, high=256, what="requests in flight", help="Requests in flight at once.")] = 4,
    prompt: Annotated[str, typer.Option("--prompt", help="umbrela (the default) or a template file.")] = "umbrela",
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")] = 0.0,
    max_tokens: Annotated[int, int_option("--max-tokens", low=1, high=1_000_000, what="the longest answer", help="The longest answer, in tokens.")] = 512,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for one answer.")] = 60.0,
    retries: Annotated[int, int_option("--retries", low=0, high=100, what="retries of a pair", help="Retries of a pair after 429, 5xx or a timeout.")] = 5,
    retry_unparsed: Annotated[bool, typer.Option("--retry-unparsed", help="Send again the pairs whose answer named no grade.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the first prompt and the number of pairs; send nothing.")] = False,
    queue_order: Annotated[str | None, typer.Option("--queue-order", help="Project setting: in human judging, pairs first where the LLM found it hardest (hardest), or disagrees with earlier people (disagreement); off. Or settle: the model itself grades the pool in the settle order (not a setting).")] = None,
    reveal: Annotated[bool | None, typer.Option("--reveal-after-grading/--no-reveal-after-grading", help="Project setting: show annotators the LLM's grade once they have graded a pair (never before).")] = None,
    format: Annotated[str, typer.Option("--format", help="table or json (the closing summary).")] = "table",
    quiet: Annotated[bool, typer.Option("--quiet", help=QUIET_HELP)] = False,
    by: Annotated[str | None, typer.Option("--by", help=BY_LEAD_HELP)] = None,
) -> None:
    """Grade the judging pool with an LLM, as one more annotator measured against the people."""
    from ragjudge.cli.judging import parse_queries
    from ragjudge.services.labels import llmhints as svc_llmhints
    from ragjudge.services.llm import client as svc_client
    from ragjudge.services.llm import judge as svc_judge
    from ragjudge.services.llm import prompt as svc_prompt
    from ragjudge.services.events.annotators import check_annotator

    if format not in ("table", "json"):
        raise UsageError(f"--format is table or json, not {quote(format)}.")
    settle = queue_order == "settle"
    if settle and (base_url is None or model is None):
        raise UsageError("--queue-order settle orders the pairs a model grades (it is not a "
                         "project setting): give --base-url and --model too.")
    if settle:
        queue_order = None
    settings_only = base_url is None and model is None and (queue_order is not None or reveal is not None)
    if dry_run and queue_order is None and reveal is None:
        reads_only()
    if not settings_only and (base_url is None or model is None):
        raise UsageError("llm-judge needs --base-url (e.g. http://127.0.0.1:8000/v1) and --model. "
                         "See 'ragjudge llm-judge --help'.")
    if not 0.0 <= temperature <= 2.0:
        raise UsageError(f"--temperature {temperature}: give a value from 0 to 2.")
    if not 0.0 < timeout <= 3600:
        raise UsageError(f"--timeout {timeout}: give seconds, more than 0 and at most 3600.")
    if queue_order is not None and queue_order not in svc_llmhints.QUEUE_ORDERS:
        raise UsageError(f"--queue-order {queue_order}: use {', '.join(svc_llmhints.QUEUE_ORDERS)}.")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {safe(base_url)}: give an http:// or https:// URL, such as "
                         "http://127.0.0.1:8000/v1.")
    template = svc_prompt.load_template(prompt)
    with open_project() as project:
        access = access_of(project, by)
        if queue_order is not None or reveal is not None:
            svc_llmhints.set_judging_settings(project, access=access, order=queue_order,
                                              reveal=reveal)
            console.print(f"Human judging: queue order {svc_llmhints.queue_order(project)}; the LLM's grade "
                          f"{'shown' if svc_llmhints.reveal_after_grading(project) else 'not shown'} after "
                          "grading.")
        if settings_only:
            return
        assert base_url is not None and model is not None
        name = check_annotator(annotator or svc_judge.default_annotator(model))
        svc_judge.check_llm_annotator(project, name)
        run_list = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
        options: dict[str, Any] = dict(runs=run_list, depth=depth, queries=parse_queries(queries),
                                       category=category, limit=limit, retry_unparsed=retry_unparsed,
                                       order="settle" if settle else "depth")
        with progress_bar(quiet) as bar:  # the runs' deeper ranks, if the pool goes deeper than their rows
            if dry_run:  # the first pair and how many: the pool is counted, not listed
                first, count = svc_judge.dry_plan(project, name, progress=bar, **options)
            else:
                pairs = svc_judge.plan_pairs(project, name, progress=bar, **options)
        if dry_run:
            _dry_run(project, template, first, count, name, format)
            return
        _require_httpx()
        key = os.environ.get(api_key_env) or None
        settings = svc_client.ClientSettings(base_url=base_url, model=model, api_key=key,
                                      temperature=temperature, max_tokens=max_tokens,
                                      concurrency=concurrency, timeout=timeout, retries=retries,
                                      key_env=api_key_env)
        if not pairs:
            console.print(f"Nothing to send: {safe(name)} has answered every pair of this pool "
                          "(--retry-unparsed sends again those whose answer named no grade).")
            return
        summary = svc_judge.Summary(pairs=len(pairs))
        try:
            with progress_bar(quiet) as bar:
                def report(s: svc_judge.Summary) -> None:
                    summary.__dict__.update(s.__dict__)
                    if bar is not None:
                        bar(s.done, s.pairs, f"{name} grading", unit="pairs",
                            detail=f"{s.prompt_tokens + s.completion_tokens:,} tokens · "
                                   f"{s.unparsed} unparsed · {s.failed} failed")

                summary = svc_judge.judge(project, pairs, settings, annotator=name, access=access,
                                          template=template, progress=report)
        except KeyboardInterrupt:
            _summary(summary, name, format, interrupted=True)
            raise
    _summary(summary, name, format)


def _require_httpx() -> None:
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise UsageError("llm-judge talks to the model through httpx, which is not installed: "
                         "pip install 'ragjudge[llm]' (or pip install httpx).")


def _dry_run(project, template: str, pair: tuple[str, str] | None, count: int, name: str,  # noqa: ANN001
             format: str) -> None:
    """The prompt of the first pair, and how many pairs would be sent."""
    from ragjudge.services.llm.prompt import pair_prompt, prompt_values

    first = pair_prompt(project, template, prompt_values(project), *pair) if pair else None
    if format == "json":
        print_json({"annotator": name, "pairs": count, "first_pair": list(pair) if pair else None,
                    "first_prompt": first})
        return
    if pair is None or first is None:
        console.print(f"Nothing to send: {safe(name)} has answered every pair of this pool "
                      "(--retry-unparsed sends again those whose answer named no grade).")
        return
    pairs = "pair" if count == 1 else "pairs"
    console.print(f"[bold]The first prompt[/] (1 of {count:,} {pairs}: query {safe(quote(pair[0]))}, "
                  f"chunk {safe(quote(pair[1]))}):", soft_wrap=True)
    console.print(for_terminal(first, multiline=True), markup=False, soft_wrap=True)
    console.print(f"[bold]{count:,}[/] {pairs} would be sent as {safe(name)}; nothing was sent.")


def _summary(summary, name: str, format: str, *, interrupted: bool = False) -> None:  # noqa: ANN001
    data = {"annotator": name, **summary.to_json(), "interrupted": interrupted}
    if format == "json":
        print_json(data)
        return
    out = err_console if interrupted else console
    out.print(
        f"[bold]{safe(name)}[/]: {summary.graded:,} graded, {summary.unparsed:,} unparsed, "
        f"{summary.failed:,} failed of {summary.pairs:,} pairs"
        + (f" ({summary.already:,} graded meanwhile by another run)" if summary.already else "")
        + f"; tokens {summary.prompt_tokens:,} in, {summary.completion_tokens:,} out; "
        f"{summary.wall_seconds:.1f} s" + (f", {summary.retries:,} retries" if summary.retries else "")
        + (" — interrupted; every grade received is kept." if interrupted else "."))
    if summary.failed and not interrupted:
        out.print("Failed pairs are left unjudged: run the same command again to retry them.")
