"""A small, general software-engineering related-term table for query expansion.

Agents ask from the symptom ("the process died while saving"), entries are written from the
fix ("atomic writes", "crash"). Each line below is a group of words that describe the same
thing or the usual symptom/cause/fix neighbourhood of one problem, in any project. Nothing here
names a particular product or store. Words are stemmed at import with the index's stemmer, so
any inflection in the table works.

An expanded word only ever stands in for the query word it came from, at a discount (see the
engine), so it can fill a vocabulary gap but never outweigh a literal match.
"""

from __future__ import annotations

from context_keeper.search.tokenize import STOP_WORDS, stem

_GROUPS = """
crash die died dies killed kill abort panic segfault terminate terminated exit exited oom
save saving write persist persisted flush fsync store
corrupt corrupted corruption truncated truncate garbage broken partial damaged malformed unreadable mangled
atomic atomically rename replace temp tempfile
slow slowness latency performance speed fast faster lag laggy sluggish sluggishness crawl crawling
timeout timeouts hang hangs hung stuck freeze frozen unresponsive block blocked deadlock
memory ram heap leak leaks oom swap
overload overloaded overwhelm overwhelmed flood flooded backlog backpressure pileup piling congestion
buffer cap capped limit limits bound bounded ceiling quota max maximum throttle throttling
queue queued backlog buffer waiting wait
duplicate duplicates duplicated twice double doubled repeated repeat idempotent idempotency dedupe deduplicate again
concurrent concurrency parallel race simultaneous simultaneously contention lock locking mutex
auth authenticate authentication login logon credential credentials password signin token session
permission permissions access authorize authorization role roles forbidden denied privilege
secret secrets key keys credential apikey leaked exposed rotate rotation
config configuration configure settings setting option options preference env environment variable
deploy deployment deploys release rollout ship publish rolling downtime
test tests testing spec specs ci assert fixture mock flaky
database db sql postgres postgresql sqlite mysql table tables schema query queries row rows
migration migrations migrate schema upgrade alter
cache caching cached memoize stale staleness invalidate invalidation expire expiry ttl fresh
retry retries retrying backoff transient intermittent flaky jitter
network connection connectivity offline disconnect disconnected unreachable socket outage online
error errors failure failures fail fails failed exception exceptions fault bug broken
log logs logging trace tracing stderr stdout debug diagnostic
ui interface screen page view button display render frontend
clock timestamp timestamps timezone utc date time skew drift daylight dst
order ordering sort sorted sequence sequential rank ranking priority
delete deletion remove removal drop purge erase wipe
sync synchronise synchronize synchronization replicate replication conflict conflicts merge reconcile
encode encoding decode utf unicode charset character characters emoji accent
large big huge grow growth growing bloat size oversized heavy
search find lookup query match retrieval
notify notification notifications alert alerts email message messages ping page pager
price pricing cost costs billing payment charge invoice refund money currency
version versions versioning compat compatibility backward upgrade breaking
dependency dependencies package packages library libraries vendor install pin
startup start boot init initialise initialize cold import load loading
lose lost losing loss disappear disappeared missing vanish vanished gone dropped drop
mobile phone app handheld device tablet android ios
file files disk storage path directory folder filesystem
restart reboot reload resume restarted
schedule scheduled scheduler cron job jobs periodic nightly batch sweep
compress compression gzip zip archive
image images photo picture thumbnail
validate validation sanitize sanitise check reject rejected invalid malformed verify
undo rollback revert restore backup snapshot
worker workers consumer consumers process processes thread threads job
poll polling interval periodic busy
webhook webhooks callback push event events
api endpoint endpoints request requests http rest call calls
expensive cost costs overhead wasteful cheap
rate ratelimit limit limits quota throttle throttled 429
user users customer customers account accounts
count counter total number amount quantity
unit units gram grams kilogram weight weights metric imperial measurement precision rounding float decimal
offline online connectivity signal coverage
identity identify prove proof authenticate authentication credential verify impersonate
read reader reading parse parser parsing format formats input loader decode
owe owes owed owing balance balances debt credit ledger account outstanding
legacy deprecated deprecate deprecation obsolete outdated remove rid sunset
option options setting settings key keys flag flags parameter config
upgrade update updated updating bump toolchain compiler
producer consumer consume consumes reader writer channel pipe stream backpressure bounded
outpace outrun behind fall overwhelm backpressure bounded buffer cap producer consumer
email emails mail smtp inbox mailbox
password passwords passphrase hash hashed hashing bcrypt argon salt
encrypt encrypted encryption decrypt cipher tls ssl https certificate
tenant tenants organization organisation workspace isolation multitenant
transaction transactions commit rollback atomic isolation
checksum checksums hash digest fingerprint deterministic reproducible
deterministic nondeterministic reproducible random randomness flaky
install installation setup build compile link linker toolchain
plugin plugins extension extensions addon addons
docs documentation readme guide manual
security vulnerability vulnerabilities exploit injection xss csrf attacker
upload uploads download downloads transfer attachment attachments blob
trash recycle undelete recover recovery restore
notify notification push poke websocket realtime live
battery power energy drain
wrong incorrect mismatch discrepancy drift inconsistent inaccurate
blank empty white spinner loading
accessibility accessible a11y blind impaired screenreader wcag aria keyboard contrast
sms text texts texting textmessage
weekday weekdays weekend weekends monday tuesday wednesday thursday friday saturday sunday
quiet night nights overnight asleep sleep sleeping bed bedtime wake waking
decommission decommissioned decommissioning retire retired retiring retirement shutdown shut teardown sunset
group groups grouped grouping lump lumped combine combined
busy workload capacity overloaded swamped overworked utilisation utilization
fresh freshness lag lagging behind delay delayed stale staleness
pending queued queue waiting
auto automatic automatically automated automation
purge flush invalidate evict eviction
security hack hacked hacker compromise compromised malicious breach attacker
maintenance upgrade downtime
gps location geolocation coordinates
download downloads fetch fetching
legal lawyer attorney counsel court lawsuit sue sued subpoena litigation
cleanup clean delete remove removal purge
copyright dmca infringement takedown piracy
eta arrival arrive
consensus coordination coordinator quorum raft paxos zookeeper etcd
battery dead
holiday holidays vacation travel travelling abroad
computer laptop desktop pc workstation
""".strip().splitlines()


def _build() -> dict[str, tuple[str, ...]]:
    related: dict[str, set[str]] = {}
    for line in _GROUPS:
        words = {stem(w) for w in line.split() if w not in STOP_WORDS}
        for w in words:
            related.setdefault(w, set()).update(words - {w})
    # Sorted, not a set: callers keep the top few by weight and ties are common, so the order
    # must not depend on the per-process string hash seed (rankings must be reproducible).
    return {w: tuple(sorted(r)) for w, r in related.items()}


RELATED: dict[str, tuple[str, ...]] = _build()


def related_terms(term: str) -> tuple[str, ...]:
    return RELATED.get(term, ())
