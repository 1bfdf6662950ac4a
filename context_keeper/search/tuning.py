"""Scoring knobs in one place, so the eval can ablate each technique (``evals/run_retrieval.py``).

The defaults are the configuration calibrated on the dev split of ``evals/golden.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tuning:
    k1: float = 1.2
    # BM25F field groups (see fields.GROUPS): title, tags+retrieval_hints, main text, details.
    group_weights: tuple[float, float, float, float] = (3.0, 2.0, 1.0, 0.6)
    # Details (steps, alternatives, tradeoffs) are normalised less than the main text since
    # round 16: 0.6 was chosen in every leave-one-store-out fold of sixty stores' dev (held-out
    # MRR 0.860 -> 0.862, evals/knob_cv.py group_b); a long pipeline's steps are its substance.
    group_b: tuple[float, float, float, float] = (0.5, 0.3, 0.75, 0.6)
    # Query weight of everyday English words (generic.py): they match, but count less. 0.3 was
    # chosen on round 1's four stores; on forty-eight stores' dev, 0.5 is chosen in every
    # leave-one-store-out fold (MRR 0.854 -> 0.862, evals/knob_cv.py generic_weight).
    generic_weight: float = 0.5
    # Coherence: relevance is scaled by the share of the first ``coherence_k`` query words the
    # entry itself contains (0 turns it off).
    coherence_k: int = 4
    # Share of a word credited to coherence when the entry has only a related term for it.
    coherence_related: float = 0.0
    # Map coverage × coherence through the fitted confidence model (abstain.confidence).
    confidence: bool = True
    # A matching superseded entry lends this share of its score to its (active) successor.
    successor_credit: float = 0.8
    # ... and then ranks right behind that successor (history questions without a cue).
    history_follows: bool = True
    # A question about the past: what an entry near the top superseded comes right before it.
    history_leads: bool = True
    # Any other question: when the first entry replaced an older one, that one is kept within the
    # first ``history_floor`` results (0 = off), so a question about the past without a
    # recognisable cue still sees the old answer.
    history_floor: int = 3
    # Recognise questions about the past (priors.asks_about_past); off = robustness check.
    history_cues: bool = True
    # A how-to question ("what do we need to do", "walk me through"): pipelines' ordering score
    # is multiplied by this (1 = off). Dev MRR rises up to 2 and is flat beyond (evals/README.md).
    procedure_prior: float = 2.0
    # The order weighs each asked word by its IDF to this power, relevance by the IDF itself: an
    # entry sharing several of the question's words then outranks one sharing a single rare
    # word. 0.6 since round 20 (dev MRR 0.843 -> 0.849, chosen in every leave-one-store-out fold
    # against 1, evals/README.md); 1 = the relevance's weights. Order only: relevance, and with
    # it abstention, is unchanged.
    order_idf_power: float = 0.6
    # A question asking for a duration, an amount, a number or a version whose most relevant
    # entry states none near its words (answer_type.py): the answer's relevance is scaled by
    # this (1.0 = off). Relevance only; the order is unchanged.
    answer_type_factor: float = 0.5
    # ... and by this when the entry's values sit only in sentences sharing one of the question's
    # two or more topical words (the value may be of something else). Off (1.0): on dev, by
    # leave-one-store-out (evals/answer_type_experiment.py), 0.9-0.7 raised the held-out AUC
    # (0.720 -> 0.74-0.76) without changing the default's figures; on test the AUC rose less
    # (0.647 -> 0.659) and near the default operating point it flagged fewer unanswered
    # questions (0.259 -> 0.236 at 5% of answerable ones flagged), so it is not on by default.
    answer_type_partial_factor: float = 1.0
    # ... and the sentence stating the value must share one of the topical words among the first
    # ``answer_type_focus`` words after the question's value cue, when there are any (0 = off):
    # "how many mid-roll slots" is not answered by a number of episodes (answer_type.focus_terms).
    answer_type_focus: int = 2
    # ... and a how-to question whose most relevant entry never mentions the operation asked
    # about ("how do we rotate the key?") is scaled by answer_type_factor as well (False = off).
    answer_type_action: bool = True
    # A file path in the query ("src/packwise/sync/retry_queue.py"): its directories and suffix
    # (tokenize.path_context) are no part of relevance, and order entries at this share of their
    # weight, so an entry about the file's name comes before one in the same directory only.
    # False = they count as any asked word (before round 18).
    path_context: bool = True
    path_context_weight: float = 0.1
    # A number in the query ("200", "500ms") counts for an entry only where one of the entry's
    # sentences states it beside another asked word (numbers.py): a log line's status code or
    # duration is no answer from an entry stating that number of something else. False = a
    # number counts as any asked word (before round 19).
    numbers_need_a_word: bool = True
    # In a question about the past, the words that only say when ("originally", "in the past",
    # "at first") are no part of relevance: no entry is about them, and as asked words no entry
    # has they made a recorded answer read as "nothing recorded" (priors.without_time_cues).
    time_cues_off_topic: bool = True
    # Related-term expansion: a related word stands in for a query word at this discount.
    synonyms: bool = True
    synonym_weight: float = 0.5
    max_related: int = 5
    # Pseudo-relevance feedback: reorder with terms of the first-pass top entries.
    prf: bool = False
    prf_docs: int = 3
    prf_terms: int = 10
    prf_weight: float = 0.3


DEFAULT_TUNING = Tuning()
