"""The phrasing grammar's vocabulary: every table of words and forms the renderer writes, as data.

Read a table as "one of these, chosen by the chooser". Tables are grouped by what they phrase: tool
mentions, argument forms, schedules, output kinds, shaping, frames (preambles, politeness, closings),
unsupported requests, and the names catalogs are made of. Nothing here decides anything; the renderer
(``rendering.py``) and the unsupported families (``unsupported.py``) pick from these tables and record the
*axis* and *form* of each pick, so that every instruction says how it was phrased.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

from reference.lexer import lex
from strategies._internal.values import OBJECT_NAMES


_VERBS = (
    "call", "run", "invoke", "use", "execute", "trigger", "please call", "call the tool", "use the tool",
    "run the tool", "hit", "make a call to", "go ahead and call", "", "", "fire off", "do a call to",
    "ping", "kick off", "perform", "call up", "make a request to", "hit the endpoint", "use", "via", "with",
    "through", "by calling", "launch", "start",
)
_TOOL_SUFFIX = ("", "", "", "tool", "()")
_ARG_INTRO = ("with", "", "using", "for", "where", "passing", "given", "with the arguments", "setting", ":", "--",
              "with parameters", "and", ",", "taking", "supplying", "and pass", "with args")
_ARG_JOIN = ("and", ",", ", and", "plus", "")
_ARGS_FIRST_INTRO = ("for", "with", "using", "given")
_SEQ_CONNECT = (
    ". When that is done,", ". Wait for it to finish, then", ", and when it completes", ". Afterwards,", ". Second,",
    ", then afterwards", "; after it finishes,", ". Next up:",
    ", then", "then", ". Then", "; then", ", and then", "and then", ", after that", ". After that,",
    ", next", ". Next,", ", followed by", "followed by", ", afterwards", "and afterwards", "and after that",
    ". Once that is done,", ", and once it finishes,",
)
_SEQ_FINAL = (", and finally", ". Finally,", ", lastly", "and finally")
_PLAIN_CONNECT = ("and", ",", ", and", ". Also", "; also", "plus", ", as well as", ". And")
_PAR_CONNECT = ("and", ",", ", and", "while also", "and at the same time", ", simultaneously", "alongside", "plus")
_PAR_PREFIX = (
    "In parallel,", "Concurrently,", "At the same time,", "Simultaneously", "In parallel", "All at once,",
    "Run these in parallel:", "Do these concurrently:", "Make simultaneous calls:", "Fire these off together:",
    "Without waiting between them,", "Side by side,", "Concurrent requests:", "In parallel please:",
    "These are independent, run them at the same time:",
    "Don't wait for one before starting the other:", "No need to serialize these:", "Fan out:",
    "Overlap these calls:", "Kick these off together:", "Start all of them at once:", "Independently and at once,",
    "Do not wait between calls:", "As parallel calls:", "Fan out", "In the same moment,", "Both at once:",
    "Parallel:", "Concurrently please:", "At once:",
)
#: a schedule word said inside the request, before its first call ("concurrently fetch_invoice …")
_PAR_INLINE = ("concurrently", "in parallel", "simultaneously", "at the same time", "all at once", "fan out",
               "together", "in one go", "in the same moment", "at once", "parallel")
_SEQ_INLINE = ("one after another", "in order", "sequentially", "step by step", "one by one", "in sequence",
               "in turn")
_PAR_SUFFIX = (
    "in parallel", "concurrently", "at the same time", "simultaneously", "all at once", ", in parallel",
    ", all concurrently", "-- run them in parallel", ". Run them concurrently", ". Do it all in parallel",
    ", at once", "side by side", ", simultaneously please", "- parallel please", "together at the same time",
    ", without waiting for each other", ". They are independent, so run them concurrently", "in parallel with each other",
    "; don't wait for one before starting the other", "-- no need to serialize them", ", overlapping them",
    "-- start both concurrently", ", in one go", "without blocking on each other", ". Fan them out",
    ", run together", ". These don't depend on each other, so do them at once", ", run in parallel",
    "-- run them in parallel", "in same moment", ", both at once", ". Do them together", ", in one batch",
    ". Parallel is fine", "all three at once",
)
#: (the quantifiers and pronouns of the parallel phrases, "these", "both", "all", "each", "them", are said as often
#: in sequential ones: a schedule is in its schedule words, not in "both" or "these")
_SEQ_PREFIX = ("First,", "First", "In sequence,", "Sequentially,", "One after another,", "In order,", "Step by step,",
               "Don't run these in parallel:", "Not in parallel, please:", "Do not parallelize:", "One by one:",
               "Strictly in order:", "Run these one after another:", "Do these in order:", "Both, one after the other:",
               "Do all of them in sequence:", "Each in turn:", "These in this order:", "Do both in turn:",
               "All of them, one at a time:", "Take these one by one:")
_SEQ_SUFFIX = (
    "in sequence", "sequentially", "one after another", "one at a time", "in this order", ", in order",
    ". Run them one by one", ", one after the other", "-- not in parallel", ", not at the same time",
    ". Wait for each to finish before the next", ", each after the previous one", ". Do not run them concurrently",
    ", both in order", ". Do these one after another", ", all of them in sequence", ". Run each of them in turn",
    "-- both of them, one at a time", ", each in turn", ". Do them in this order", ", all of them sequentially",
    ". These go one after the other", ", the same way, one by one",
)
#: markers of a numbered or bulleted list of sequential calls (``{n}`` is the step's number)
_SEQ_LIST = ("{n})", "{n}.", "Step {n}:", "({n})", "-", "*", "#{n}", "{n} -")
#: a goal stated before the calls, in words the catalog does not own
_LEAD_VERBS = ("Show me", "Give me", "Turn off", "Turn on", "Set up", "I want to know", "What does", "Check",
               "Find out", "Look up", "Sort out", "Update", "Handle", "Figure out", "We must", "Time for")
_POLITE = ("", "", "", "Please", "Could you", "Can you please", "I need you to", "Kindly", "Hey,", "I'd like you to",
           "Hi!", "Quick one:", "Go ahead and", "I want you to", "Would you", "Okay,", "Task:", "Hello, please",
           "Let's", "Time to", "We need to", "Can you", "If you don't mind,", "If it's not too much trouble,",
           "When you get a chance,", "Request:", "Ask:", "TODO:", "Action:", "Need:")
_CLOSE = ("", "", "", ".", "please.", "thanks!", ", thank you.", "!", ". Thanks", "?", ", cheers.", ". Much appreciated.",
          ", ok?", ". Thank you!")
_ALL = (
    "return everything", "give me all of them", "I want every result", "return all of their results",
    "send back all results",
    "return all results", "return all of the results", "return every result", "give me all the results",
    "return all records", "and return everything", "collect all results", "return the results of all calls",
    "return all outcomes", "keep every result",
)
_ALL_TWO = ("return both results", "give me both results", "return both")
_ALL_THREE = ("return all three results", "give me all three")
_LAST = (
    "final result only", "only the final result", "just the last result please", "I only need the last result",
    "return the result of the final call only",
    "return only the last result", "return just the final result", "only return the result of the last call",
    "give me only the final result", "return the last call's result", "keep just the last result",
    "return only the final outcome", "just the last one matters",
)
_FIELDS_BEFORE = ("keep only the", "keep only", "only", "project", "select", "with just", "return only",
                  "with fields", "fields", "showing only", "keeping", "just the", "give me only", "return",
                  "returned as", "trimmed down to", "I only need", "with columns", "reduced to", "show me just",
                  "pick out", "only want")
_FIELDS_AFTER = ("", "", "fields", "columns", "properties", "field only", "fields only", "only",
                 "(only those fields)", "and nothing else", "columns only")
_LIMIT_FORMS = (
    ("first", "rows"), ("limit to", "rows"), ("at most", "rows"), ("take the first", ""),
    ("only the first", "results"), ("limit", ""), ("up to", "rows"), ("the first", "items"),
    ("cap it at", "rows"), ("no more than", "rows"), ("maximum", ""), ("max", "rows"), ("capped at", ""),
    ("just", "rows"), ("only", "results"), ("no more than", ""), ("show", "at most"), ("cap at", ""),
    ("limited to", "entries"), ("a maximum of", "records"),
)
#: what ends a request's shaping said before its call ("Only name and clinic, maximum 10. find_doctors …")
SHAPE_FIRST_END = (".", ":", "--", ";", ", from", ". Use", "\u2014")
AT_LIMIT_WORD = "Thanks"  # the last token of every at-limit instruction
_PADDING = (
    "This is a routine request.", "Thanks in advance.", "Nothing else is needed.", "Please be careful.",
    "This is for the weekly report.", "Keep it simple.", "No rush on this one.", "That is all.",
)

# Unsupported phrasings ({A} and {B} are rendered calls, {a} and {b} bare tool names).
_DEPENDENCY = (
    "{A}, then pass its result to {b}", "{A} and use its output as the input of {b}",
    "{A}, then call {b} with the id it returns", "{A}; feed the result into {b}",
    "call {b} using the value returned by {a}", "{A}, then {b} for each id from the first result",
    "{A} and then {b} with the name from that response", "take what {a} returns and give it to {b}",
)
_MIXED = (
    "{A} and {B} in parallel, then {C}", "{A}, then {B} and {C} at the same time",
    "run {A} and {B} concurrently and after both finish {C}", "first {A}, then in parallel {B} and {C}",
    "{A} and {B} simultaneously, followed by {C}",
    "{A} and {B} in parallel; after both are done {C}", "{A}; after it completes, run {B} and {C} in parallel",
    "{A} then {B}, while simultaneously running {C}", "{A} then {B}, but run {C} concurrently with both of them",
    "Run two groups in sequence: first {A} alongside {B} (concurrently), then {C}",
    "First, {A}. After that, concurrently: {B} and {C}", "{A}, then, concurrently, {B} and {C}",
    "{A} and {B} at once, and only when both finish, {C}",
)
_CONDITION = (
    "if {a} returns nothing, {B}", "{A}, and only if it succeeds {B}", "{A} unless it fails",
    "{A}; if it fails, {B}", "when {a} returns an empty list, {B}", "{A} only if today is Monday",
    "{A}, and if the result is empty {B}", "{A}, otherwise {B}",
)
_RETRY = (
    "{A} and retry up to 3 times if it fails", "{A}, retrying on error", "keep trying {a} until it succeeds",
    "{A}; if it errors, try again", "{A} with retries", "{A} and retry it twice on failure",
)
_LOOP = (
    "for each result of {a}, {B}", "{A} for every item in the list", "repeat {A} 5 times",
    "{A} in a loop until it returns nothing", "{A} for each page from 1 to 10", "loop over all teams and {B}",
    "{A} repeatedly", "{A} again and again while it returns rows",
)
_CODE = (
    "write a JavaScript function that calls {a}", "{A} and then run this code: console.log(result)",
    "eval the expression tools.{a}() and return it", "generate a script that uses {a}",
    "{A} and transform the output with a regex", "{A}, then compute the average in code",
    "write a loop in JS around {a}",
)
_FILTER = (
    "{A} and sort the results by {p}", "{A}, keeping only rows where {p} is \"x\"", "{A} and count the results",
    "{A} and sum the {p} values", "{A}, grouped by {p}", "{A} and return the average {p}",
    "{A}, sorted descending", "{A} and remove duplicates", "{A} and filter out empty rows",
    "{A}, top 5 by {p}",
)
_UNKNOWN_NAMES = ("delete_all", "fetch_orders", "sendSlack", "get_stock", "lookup_customer", "translate_text")


def _phrase_words() -> frozenset[str]:
    pools: list[Sequence[str]] = [
        _VERBS, _TOOL_SUFFIX, _ARG_INTRO, _ARG_JOIN, _ARGS_FIRST_INTRO, _SEQ_CONNECT, _SEQ_FINAL, _PLAIN_CONNECT,
        _PAR_CONNECT, _PAR_PREFIX, _PAR_SUFFIX, _SEQ_PREFIX, _SEQ_SUFFIX, _POLITE, _CLOSE, _ALL, _ALL_TWO,
        _ALL_THREE, _LAST, _FIELDS_BEFORE, _FIELDS_AFTER, _PADDING, _DEPENDENCY, _MIXED, _CONDITION, _RETRY,
        _LOOP, _CODE, _FILTER, [w for pair in _LIMIT_FORMS for w in pair], _ARG_FORMS_WORDS, NEUTRAL,
        [m.format(n=1) for m in _SEQ_LIST], _LEAD_VERBS,
        (" ".join(_UNKNOWN_NAMES),), ARG_CONNECTORS, ARG_ADJECTIVES, ARG_BACK_CONNECTORS, UNITS, MEASURE_BEFORE,
        MEASURE_JOIN, ARG_JOIN, TRAILING_TOOL, [w for pair in PAREN_TOOL for w in pair], TOOL_LEAD,
        [w for pair in SENTENCE_TOOL for w in pair], REASONS, NEAR_MISS_AFTER, ASIDES, NEAR_MISS_NOUNS,
        NEAR_MISS_FRAMES,
        [w for forms in REPEAT_COUNT.values() for w in forms], [w for pair in REPEAT_AGAIN for w in pair], ("once",),
        [w for pair in QUESTIONS for w in pair], NEAR_MISS, DISTRACTOR_BEFORE, MORE_PREAMBLES, TRAILING_LEAD, ARROWS, TOOL_PURPOSE, TOOL_WITH,
        [t for forms in PROSE_UNSUPPORTED.values() for t in forms],
        [t.format(n=1, **{k: "" for k in SITUATION_SLOTS}) for t in SITUATIONS], [t.format(v=1, u="") for t in RESTATEMENTS],
        [w for words in SITUATION_SLOTS.values() for w in words],
    ]
    words = set()
    for pool in pools:
        for phrase in pool:
            for token in lex(phrase).tokens:
                if token.kind == "word":
                    words.add(token.text.lower())
    return frozenset(words)


_ARG_FORMS_WORDS = ("set to", "as", "equal to", "is", "of", "the", "as the", "for the", "to", "equals", "value",
                    "should be", "must be", "with value", "its", "a", "in", "being")

#: Everyday English words that change nothing, sprinkled into renderings so that an unfamiliar word is
#: never a signal by itself (none of them is a schedule, output, shaping or unsupported-request word).
NEUTRAL = tuple("""
a an the this that these those it its my our your their me us you we they i he she
really quickly just simply kindly now today right away asap soon please thanks ok okay sure
real quick as usual like before for me for us for the team for the dashboard for the report
so we can see what we have on our side for the demo for testing in the app this morning tonight
record records entry entries data info information details item items stuff thing things value
account system service server platform app website portal endpoint api backend tool function
fetch get grab pull look check find show see view read load query request retrieve obtain
need want would like have got hoping trying aiming mean meant basically actually
good nice great fine cool quick small single simple regular normal standard usual current latest
new old main primary default specific particular certain exact proper correct right
what which who whose how much many some any several few more less same other another different
about around regarding concerning per via from into onto over under between within without
is are was were be been being do does did done can could will would should may might must
—  -  (  )  !  ?  :  ' ` ~ * _ / | &
""".split())



_NAME_VERBS = ("list", "get", "find", "search", "create", "send", "fetch", "read", "update", "delete", "post",
               "check", "lookup", "load", "sync", "book", "cancel", "resolve", "query", "count", "open")
_NAME_NOUNS = ("users", "weather", "orders", "invoice", "email", "message", "repo", "issues", "files",
               "ticket", "flight", "hotel", "stock", "price", "forecast", "contact", "calendar", "event",
               "payment", "customer", "product", "report", "team", "city", "status", "region", "page", "date",
               "owner", "project", "amount", "title", "body", "id", "score", "flag", "tag", "path", "lang",
               "units", "country", "since", "size", "url", "name", "query", "user", "channel", "text", "label")
_ODD_NAMES = OBJECT_NAMES + ("$", "_", "$ref", "\u00fcber", "m\u00e9t\u00e9o", "\u5929\u6c17", "\u0394elta",
                             "x\u0301", "eval", "undefined", "NaN", "async", "of", "get", "set", "\U0001d4b3")



# --- argument forms (one per argument; a call may mix them) -----------------------------------------------

#: name then value, with a connector between (the connector's words are the connector's, never a name)
ARG_CONNECTORS = ("set to", "as", "equal to", "of", "is", "equals", "being", "to", "should be", "must be",
                  "is set to", "->", "=>", ":=", "of value", "with value", "=", "at", "is going to be",
                  "needs to be", "will be", "which is", "set at", "value", "-", "\u2192")
#: words between an article and a name ("the new team", "a target city")
ARG_ADJECTIVES = ("new", "target", "given", "right", "specific", "desired", "requested", "exact", "main")
#: value then name, with a connector between ("blue" for team)
ARG_BACK_CONNECTORS = ("for", "as", "as the", "for the", "as its", "in", "for its", "as our", "being the",
                       "is the", "should be the")
#: units that follow a number in measurement phrasing ("a radius of 10 units", "70 kg")
UNITS = ("units", "kg", "cm", "km", "m", "miles", "meters", "degrees", "dollars", "USD", "EUR", "percent",
         "ms", "seconds", "minutes", "hours", "days", "items", "pages", "times", "px", "GB", "MB", "points",
         "years", "people", "nights")
#: measurement phrasing: "a {name} of {value} {unit}", "{name} is {value}", "{value} {unit} of {name}"
MEASURE_BEFORE = ("a", "an", "the", "with a", "with an", "at a", "for a", "")
MEASURE_JOIN = ("of", "is", "at", "around", "=", "of about", "equal to")
#: between two arguments of one call
ARG_JOIN = ("and", ",", ", and", "plus", "&", "with", ";", ", with")
#: command-line flag prefixes ("--ticketId", "-n")
FLAGS = ("--", "-", "--", "/")

# --- tool mentions ---------------------------------------------------------------------------------------

#: the tool named last in its call: "... using get_weather", "... (use calculate_area)", "..., via X"
TRAILING_TOOL = ("using", "with", "via", "through", "by calling", "with the tool", "using the tool", "by way of",
                 "courtesy of", ", via", ", using", "-- use", "— use", ", with", "by running", "thru")
PAREN_TOOL = (("(use", ")"), ("(via", ")"), ("(using", ")"), ("[", "]"), ("(tool:", ")"), ("(with", ")"),
              ("(call", ")"), ("- use", ""), ("(", ")"))
#: a leading tool: "get_weather:", "get_weather ->", "get_weather()"
TOOL_LEAD = (":", "->", "\u2192", "()", "", "-", "—", "=>", ">")

#: what starts a call whose tool is named last ("get the area for radius 10 using calculate_area")
TRAILING_LEAD = ("get", "find", "check", "look up", "fetch", "compute", "work out", "pull", "grab", "show me",
                 "figure out", "I need", "tell me", "give me", "get me", "retrieve", "do", "handle", "",
                 "get all the details", "pull up everything", "get all the info", "show me every detail",
                 "look up the full record", "find everything")
#: the tool named in a sentence of its own after the call's arguments ("... . Use get_weather for that.")
SENTENCE_TOOL = ((". Use", "for that"), (". You can use", ""), (". Use the", "tool"), (". Please use", "for this"),
                 (". The tool for this is", ""), ("-- I think", "does that"), (". Tool:", ""),
                 ("; should be doable with", ""), (". I believe", "can do it"), (", the", "tool should work"),
                 (". Go with", ""), (". Try", "for this one"))
#: arrows between sequential steps
ARROWS = ("->", "\u2192", "=>", ">", "-->", "then ->", "&&", ">>", "; then")

#: between a tool named first and its arguments, saying what it is for ("use get_weather to check ...")
TOOL_PURPOSE = ("to check", "to look up", "to get", "to find", "to fetch", "to see", "to pull up", "in order to get",
                "so we know", "to work out", "to grab", "and look up", "and check")
#: a tool named first, in a phrase of its own ("With get_weather, look up ...")
TOOL_WITH = ("With", "Using", "Via", "Through", "By way of", "with", "using")

# --- repeated calls of one tool with one mention ------------------------------------------------------------

#: "run X twice, once with ... and once with ..." (n calls): the words before the first "once"
REPEAT_COUNT = {2: ("twice", "two times", "2x"), 3: ("three times", "thrice", "3x")}
#: what starts every repeated call after the first one (the AGAIN token is the last word)
REPEAT_AGAIN = (("and", "again"), (", then", "again"), (".", "Again"), (";", "again"), (", and", "again"),
                ("", "again"), (", and then", "again"))

#: between the calls of one tool named once by their arguments alone ("X for city "Paris" and city "Rome"")
REPEAT_NAMES_JOIN = ("and", ",", ", and", "; and", "and for", ", then", "then", "&", ", plus", "and also")
#: between the values of a list after one argument name ("X for city "Paris", "Rome" and "Berlin""); every
#: word here is one the reference planner reads as a list joiner (``reference.planner.LIST_JOINERS``)
REPEAT_LIST_JOIN = (",", "and", ", and", ", then", "then", "&", "/")
#: said after an argument given once for every call of one tool (the middle word is the ``SHARE`` token):
#: "..., year 2025 for all three", "pharmacy "CVS" for both"
SHARE_TWO = (("for", "both", ""), ("on", "both", ""), ("for", "both", "calls"), ("in", "both", ""),
             ("for", "each", ""), ("", "both", "times"), ("with", "both", ""), ("", "each", "time"))
SHARE_THREE = (("for", "all", "three"), ("on", "all", "three"), ("for", "each", ""), ("in", "all", "three"),
               ("for", "all", "three calls"), ("in", "every", "call"), ("", "each", "time"), ("for", "every", "one"))
#: what comes before an argument given once for every call
SHARE_INTRO = (",", ", with", "with", "and", ";", ", all with", "", ", using")

# --- frames --------------------------------------------------------------------------------------------------

#: a question around the request ("Can you ... ?")
QUESTIONS = (("Can you", "?"), ("Could you", "?"), ("Would you mind", "?"), ("Any chance you could", "?"),
             ("Is it possible to", "?"), ("Mind if you", "?"), ("Can I get you to", "?"))
#: words said in passing that name unsupported features innocently (a supported request stays supported)
NEAR_MISS = (
    "For all users of the dashboard:", "This is for the circular loop report.", "Sorting out the weekly numbers:",
    "Every Monday we do this:", "Just once, no retries needed:", "For our filter-free export,",
    "No need to sort anything:", "Quick one for the count team:", "For the average user,", "Each step is simple:",
    "As a first pass,", "Before the loop meeting,", "For the sum-up slide:",
    "Group chat asked for this:", "Top priority:", "For every stakeholder's peace of mind,", "Once and for all,",
    "Condition report prep:", "For the retry-policy review,",
    "All right,", "All good on my end.", "First things first:", "For the sorting facility,", "Filter team here.",
    "Once again, thanks for the help.", "For our loyalty program,", "Every little bit helps:",
    "I sorted out the access issue, so now:", "After all the back and forth,", "As always,",
    "For the loop-the-loop ride inspection,", "Each quarter we check this:", "Sum it up for me in one go:",
    "Total newbie here, sorry.", "I tried the filter page but it was down, so:", "Once you're free,",
    "In any case,", "For the counting of votes project,", "The aggregate report is due, but first:",
    "Keep me in the loop:", "The customer keeps asking about this:", "Sort this out for me:",
    "Each morning I check this:", "All three of us need this:",
)
#: words that name unsupported features, as the plain nouns of names people give teams, projects and
#: documents ("the loop team", "our retry dashboard"): put into ``NEAR_MISS_FRAMES`` (``{w}``)
NEAR_MISS_NOUNS = ("loop", "filter", "sort", "retry", "condition", "sum", "total", "average", "count", "group",
                   "order", "rank", "top", "max", "each", "every", "all", "repeat", "aggregate", "dependency")
NEAR_MISS_FRAMES = ("For the {w} team:", "This is for our {w} project.", "The {w} dashboard needs this.",
                    "Re the {w} ticket:", "From the {w} working group:", "Prepping the {w} review:",
                    "Quick one for the {w} channel.", "Our {w} squad asked for this.", "Note for the {w} doc:",
                    "It's for the {w} report.", "The {w} folks asked.", "Filing this under {w}.")
#: the same, said after the request
NEAR_MISS_AFTER = (
    "I'll sort the rest out myself.", "We'll filter it by hand later.", "No loops or anything fancy.",
    "No need to retry anything.", "That's all I need.", "All good otherwise.",
    "Count me in for the review later.", "I'll do the totals myself in the spreadsheet.", "Each of us needs a copy.",
    "It's for the sorting team.", "We'll compare them ourselves afterwards.",
    "Don't bother sorting anything.", "No filtering needed.", "I'll add it all up later.",
    "Keep me in the loop.", "The customer keeps asking.", "Trying to sort out my week.",
    "It's one of those every-morning things.", "Each of them asked twice already.",
)
#: a quoted distractor said before the request ("About \"Q3\":")
DISTRACTOR_BEFORE = ("About", "Re:", "Ticket", "Subject:", "Context:", "Regarding", "Note", "Project", "Ref")
DISTRACTOR_AFTER = (":", "--", ".", ",", " -")

# --- common-word names -------------------------------------------------------------------------------------

#: argument names that are ordinary English words, some of which the renderer also writes as connectors
COMMON_ARG_NAMES = ("to", "from", "for", "in", "by", "on", "as", "at", "type", "name", "version", "title",
                    "limit", "all", "with", "of", "date", "time", "query", "mode", "kind", "level", "format",
                    "id", "key", "value", "text", "state", "status", "order", "sort", "filter", "count",
                    "first", "last", "page", "size", "start", "end", "since", "until", "target", "source")

#: realistic tools by domain: (name, arguments as (name, type) pairs, returns kind, return properties)
DOMAIN_TOOLS: tuple[tuple[str, tuple[tuple[str, str], ...], str, tuple[str, ...]], ...] = (
    ("get_weather", (("city", "string"), ("units", "string"), ("days", "number")), "object", ("temperature", "conditions")),
    ("get_forecast", (("location", "string"), ("days", "number")), "array", ("date", "high", "low", "summary")),
    ("calculate_area", (("shape", "string"), ("radius", "number"), ("width", "number")), "object", ("area", "unit")),
    ("calculate_bmi", (("weight", "number"), ("height", "number")), "object", ("bmi", "category")),
    ("solve_quadratic", (("a", "number"), ("b", "number"), ("c", "number")), "array", ("root", "real")),
    ("get_stock_price", (("symbol", "string"), ("exchange", "string")), "object", ("price", "currency")),
    ("convert_currency", (("amount", "number"), ("from", "string"), ("to", "string")), "object", ("result", "rate")),
    ("book_flight", (("from", "string"), ("to", "string"), ("date", "string"), ("seats", "number")), "object",
     ("confirmation", "price")),
    ("search_hotels", (("city", "string"), ("nights", "number"), ("guests", "number")), "array",
     ("name", "price", "rating", "address")),
    ("send_email", (("to", "string"), ("subject", "string"), ("body", "string"), ("urgent", "boolean")), "text", ()),
    ("send_message", (("channel", "string"), ("text", "string"), ("as", "string")), "object", ("id", "ts")),
    ("create_ticket", (("title", "string"), ("priority", "string"), ("for", "string")), "object", ("id", "status")),
    ("escalateTicket", (("ticketId", "string"), ("tier", "number")), "object", ("status", "owner")),
    ("fetch_invoice", (("invoice_id", "string"),), "object", ("total", "due", "status")),
    ("list_orders", (("status", "string"), ("since", "string"), ("limit", "number")), "array",
     ("order_id", "status", "total", "created_at")),
    ("refund_order", (("order_id", "string"), ("amount", "number"), ("reason", "string")), "object", ("refund_id",)),
    ("get_movies", (("genre", "string"), ("year", "number")), "array", ("title", "year", "rating")),
    ("get_player_stats", (("player", "string"), ("season", "number"), ("team", "string")), "object",
     ("points", "assists")),
    ("deploy_service", (("name", "string"), ("version", "string"), ("env", "string")), "object", ("status", "url")),
    ("restart_pod", (("pod", "string"), ("namespace", "string"), ("force", "boolean")), "text", ()),
    ("query_logs", (("service", "string"), ("level", "string"), ("since", "string"), ("limit", "number")), "array",
     ("timestamp", "message", "level")),
    ("scale_deployment", (("name", "string"), ("replicas", "number")), "object", ("replicas", "ready")),
    ("getTimezone", (("location", "string"),), "object", ("zone", "offset")),
    ("translate_text", (("text", "string"), ("from", "string"), ("to", "string")), "text", ()),
    ("search_books", (("query", "string"), ("author", "string"), ("limit", "number")), "array",
     ("title", "author", "isbn")),
    ("get_user", (("id", "string"), ("fields", "string")), "object", ("name", "email", "role")),
    ("list_users", (("team", "string"), ("active", "boolean")), "array", ("name", "email", "role", "team")),
    ("set_thermostat", (("room", "string"), ("temperature", "number"), ("mode", "string")), "object", ("ok",)),
    ("toggle_light", (("room", "string"), ("on", "boolean")), "text", ()),
    ("schedule_meeting", (("title", "string"), ("date", "string"), ("time", "string"), ("with", "string")), "object",
     ("event_id", "link")),
    ("get_exchange_rate", (("base", "string"), ("target", "string")), "object", ("rate", "date")),
    ("compute_interest", (("principal", "number"), ("rate", "number"), ("years", "number")), "object",
     ("interest", "total")),
    ("lookup_order", (("order_number", "string"),), "object", ("status", "eta", "carrier")),
    ("check_inventory", (("sku", "string"), ("store", "string")), "object", ("quantity", "location")),
    ("apply_coupon", (("code", "string"), ("cart_id", "string")), "object", ("discount", "total")),
    ("get_definition", (("word", "string"), ("language", "string")), "array", ("sense", "example")),
    ("create_vm", (("name", "string"), ("size", "string"), ("region", "string"), ("gpu", "boolean")), "object",
     ("id", "ip")),
    ("resolve_dns", (("name", "string"), ("type", "string")), "array", ("value", "ttl")),
    ("get_repo", (("owner", "string"), ("repo", "string")), "object", ("stars", "forks", "language")),
    ("list_issues", (("repo", "string"), ("state", "string"), ("label", "string")), "array",
     ("number", "title", "state", "author")),
)


#: sentences that say why, before the request (a request may have none, one or two)
MORE_PREAMBLES = (
    "I'm preparing the quarterly review.", "We have a customer waiting on this.", "Small favour needed.",
    "Context: the on-call rotation just changed.", "Following up on yesterday's meeting.", "Here's what I need.",
    "Hope you're well!", "Working on the migration today.", "My manager asked me to check something.",
    "Long story short:", "Okay so", "Alright, next task.", "For the record,", "Heads up, two things.",
    "Need this for a client call in ten minutes.", "Sorry to bother you again.", "FYI this is urgent.",
    "Good morning!", "Hi there, hope your day is going well.", "Hello again.", "Hey team,", "Morning!",
    "I have a customer on the phone right now.", "A client just emailed me about this.",
    "I'm covering for a colleague who is out sick.", "We're doing some spring cleaning on the accounts.",
    "The finance team pinged me about this.", "Our board meeting is tomorrow.", "I'm new here, so bear with me.",
    "This came up in standup.", "Quick question from the support queue.", "So here's the situation.",
    "I'm putting together a slide deck.", "We just had an outage.", "The release goes out tonight.",
    "Doing some research for a paper.", "I'm planning a trip.", "My lab partner needs these numbers.",
    "The store opens in an hour.", "I'm on my phone, sorry for typos.", "Not sure this is the right place, but",
    "Thanks for the help earlier.", "One more thing before I log off.", "Hi, I run a small online shop.",
    "As discussed on the call,", "Per the customer's request,", "Just got off a call with legal.",
    "Apologies for the late request.", "It's been a long week.", "Following the incident review,",
    "My boss wants a quick update.", "The patient is waiting at the front desk.", "The auditors are here today.",
    "We're migrating to the new cluster.", "I'm double checking something.", "Weird one, but here goes.",
    "Before I forget:", "While I have you,", "Help me out here:", "Ok, here is the thing.",
)
#: sentences said after the request, giving a reason or a word of thanks (never a schedule or output word)
REASONS = (
    "I need it for the weekly report.", "The customer is waiting.", "It's for a demo this afternoon.",
    "This is for the audit.", "My manager asked for it.", "Thanks a lot!", "Appreciate it.",
    "Let me know when it's done.", "No rush.", "It's pretty urgent.", "I'll check back later.",
    "Cheers, you're a lifesaver.", "We're trying to close the ticket today.", "That's it for now.",
    "That should be enough for the slides.", "The client asked twice already.", "Hope that makes sense.",
    "Sorry if this is a dumb question.", "Thanks in advance!", "I owe you a coffee.",
    "This goes into the board deck.", "We need it before the release.", "It's for the on-call handover.",
    "Trying to get ahead of Monday.", "Much obliged.", "You're the best.", "Ping me when you have it.",
    "That's what the ticket says.", "The team lead signed off on this.", "I'm trying to help a customer.",
    "// for the audit", "# urgent", "// thx", "-- thx", "(thx)", "// asap", "# prod", "// need it for standup",
    "# per the runbook", "(for the on-call doc)",
)
#: a sentence about the asker's situation, said before or after the request, built from the slot tables of
#: ``SITUATION_SLOTS`` (``{n}`` a small number): times, places and numbers said in passing ("my friends are
#: coming at 8", "press 7 is running hot again", "we are 2 hungry people"), which are never a limit, a
#: value or a reason to refuse
SITUATIONS = (
    "{who} {come} {when}.", "need it before the {event} {when}.", "it's for the {event} {when}.",
    "{machine} {n} is {state} again.", "{machine} {n} is {state}.", "we are {n} {people} and {mood}.",
    "every {period} it's the same thing.", "I have the {event} in {n} minutes.", "the {event} starts at {n}.",
    "{who} {keeps} asking about it.", "I'm trying to figure out {puzzle}.", "table {n} is waiting on this.",
    "we got {n} complaints about it this week.", "it's for the {n} o'clock {event}.", "back at my desk at {n}.",
    "I forgot it again, sorry.", "nothing else needed.", "just that, nothing else.", "{who} {come} {when}, so",
    "the {event} got moved to {when}.", "on my third coffee already.", "I'm at gate {n} right now.",
    "this is the second time this week.", "{who} {come} {when} and I'm not ready.",
    "is {machine} {n} {state} again?", "why is {machine} {n} {state}?", "is the {event} still {when}?",
    "what was it again?", "can we make the {event} {when}?", "remember {machine} {n}?",
)
#: the request said first in the asker's words, with one of its numbers ("I need 1250.75 pounds in dollars:")
RESTATEMENTS = (
    "I need {v} {u} for this:", "How much is {v} {u}?", "Quick check on the {v} {u}:", "About the {v} {u}:",
    "It's {v} {u} this time.", "We're talking {v} {u} here.", "The number is {v} {u}, so", "So, {v} {u}.",
)
SITUATION_SLOTS: dict[str, tuple[str, ...]] = {
    "who": ("my friends", "the client", "my boss", "the kids", "my mom", "the courier", "our visitors",
            "the auditor", "my sister", "the night shift", "the vendor", "my landlord"),
    "come": ("are coming", "will be here", "is calling", "lands", "shows up", "arrives", "comes by",
             "is dropping in", "gets in"),
    "when": ("at 8", "at 3", "in 5", "at 2pm", "tonight", "at 9:30", "around 6", "this afternoon",
             "in 10 minutes", "by noon", "tomorrow at 7", "on Friday", "at 11", "in 20 min"),
    "event": ("huddle", "standup", "meeting", "karaoke thing", "call", "review", "game", "dinner", "shift change",
              "demo", "handover", "trip", "retro", "board call", "school run"),
    "machine": ("press", "bay", "truck", "gate", "ward", "rack", "oven", "printer", "pump", "van", "kiln"),
    "state": ("running hot", "down", "acting up", "late", "jammed", "offline", "noisy", "beeping"),
    "people": ("hungry people", "people", "of us", "friends", "folks in line"),
    "mood": ("can't agree", "in a hurry", "waiting", "getting impatient", "starving"),
    "period": ("night", "morning", "week", "Monday", "quarter"),
    "keeps": ("keeps", "kept", "won't stop", "is"),
    "puzzle": ("a dinner bill", "my budget", "the schedule", "what went wrong", "the numbers", "my week"),
}


#: an aside inside a call, between its tool and its arguments ("call get_weather (it's for my trip) with ...")
ASIDES = ("(it's for my trip)", "-- the usual one --", "(the new one)", ", as discussed,", "(see the ticket)",
          "-- you know the one --", "(the one we set up last week)", ", please,", "(prod, not staging)",
          ", the same as yesterday,", "(for the client)", "-- quick one --")
#: stand-ins for words never seen in training: the lexicon never holds them, so training reads them as
#: the unknown word (training-time augmentation only, like ``NEUTRAL`` words sprinkled in)
UNSEEN = ("blick", "frandle", "Quorbish", "wemsy", "trask", "plinth", "gorvey", "snarp", "Velmont", "drissel",
          "hubbin", "mavrick", "Zelbo", "crandy", "pellish", "skov", "tarnly", "Brook", "wibbet", "glomer",
          "farsh", "nuddle", "Ostrava", "prell", "yondish", "kettling", "marbly", "sprock", "thessen", "dulp")

# Unsupported requests in ordinary prose ({A}, {B} rendered calls; {a}, {b} tool names; {p} a property).
PROSE_UNSUPPORTED = {
    "filter-sort-aggregate": (
        "{A} and return the sum of all totals", "{A}, then tell me which one is the cheapest",
        "{A} and give me the average of the results", "{A} but only keep the ones above 100",
        "{A} and order them by {p}", "{A}, and count how many came back", "{A}; I just need the highest {p}",
        "{A} and drop anything older than a week", "{A}, then rank the results by {p}",
        "{A} and total up the {p} column", "{A} and show me the median {p}", "{A}, only the rows with a {p} over 5",
        "{A} and sort by {p} descending", "{A}, then work out the mean {p}",
        "{A}, keep only those whose {p} is above 10", "{A} and filter them to the open ones",
        "{A}, then give me just the ones with a {p}", "{A} and add up every {p}", "{A}, grouped and counted by {p}",
        "{A} and find the maximum {p}", "{A}, excluding anything with an empty {p}",
        "{A}. How many are there in total?", "{A} and tell me how many have a {p}", "{A}, what's the combined {p}?",
        "{A}, then add them together", "{A} and work out the {p} on average", "{A}; which one has the biggest {p}?",
        "{A}, and just tell me the lowest one", "{A} and give me the percentage with a {p}",
        "{A}, newest first", "{A}, oldest at the top", "{A}, sorted alphabetically", "{A}, arranged by {p}",
        "{A} in ascending order of {p}", "{A} and put the most expensive first", "{A}, the top 3 by {p}",
        "{A} but leave out the closed ones", "{A}, except the ones without a {p}", "{A}, only those where {p} is set",
        "{A} and skip any duplicates", "{A}; I only care about the ones that failed", "{A}, then tally them up",
        "{A} and compare the two {p} values", "{A}, whichever is cheaper", "{A} and pick the best one for me",
        "{A}, only the ones over {n}", "{A} and throw out anything that costs more than {n}",
        "{A}, just the ones above {n}", "{A}, keep the ones under {n}", "{A}, ignore anything below {n}",
    ),
    "mixed": (
        "{A} and {B} at the same time, and once both are done {C}", "{A} and {B} in parallel, then {C}",
        "do {A} and {B} together; when they finish, {C}", "first {A}, then {B} and {C} at the same time",
        "{A} and {B} concurrently, and after both come back, {C}", "{A}, then {B} and {C} side by side",
    ),
    "condition": (
        "{A}, and if that comes back empty, {B}", "{A}. If it's over budget, {B}", "{A}; should it fail, {B}",
        "{A} but only when the first one is ok", "{A}, and in case nothing is found, {B}",
        "{A} and, depending on the answer, {B}", "{A}. Assuming it works, {B}", "Only if {a} says yes, {B}",
        "{A}; if the {p} is negative, {B}", "{A}, and provided it succeeds, {B}",
        "If {a} finds anything, {B}", "{A}. If not, {B}", "{A}, but if that errors out {B}",
        "{A}; in the event it returns nothing, {B}", "{A}, else {B}", "{A} -- only {b} if the first one worked",
        "{A} and when it is done, if it failed, {B}", "{A}. Should the {p} be missing, {B}",
        "{A}. In case it's down, {B}", "{A}; if there is nothing there, {B} instead", "{A}, or if that fails, {B}",
        "{A}. If the {p} looks wrong, {B}", "{A}, and only if it is above zero, {B}", "Depending on what {a} says, {B}",
        "{A}; whenever it comes back empty, {B}", "{A}, but if it's already done, skip it and {B}",
        "{A}. Assuming nothing is found, {B}", "{A}; if yes, {B}, if no, leave it",
        "{A}. Should the {p} slip past {n}, {B}", "{A}; if the {p} goes over {n}, {B}",
        "{A}, and if more than {n} come back, {B}", "{A}. If the {p} is under {n}, {B}",
        "{A}; once the {p} hits {n}, {B}",
    ),
    "loop": (
        "{A} for all users in the list", "{A} once per customer", "{A} for every region we have",
        "go through each team and {B}", "{A} over and over until it is empty", "{A} for each of the results",
        "{A}, one call per item", "{A} for each page", "do {A} for every ticket in the queue",
        "{A} and keep going until there are no more pages",
        "{A} for every one of our stores", "{A} separately for each account", "{A} for all of them, one by one",
        "{A} for each day of last month", "run {A} across every environment",
        "{A}, over and over like {n} times", "{A} {n} times in a row", "{A} every {n} minutes",
        "{A}, and repeat that {n} times", "{A} once an hour for the next {n} hours", "keep doing {A} {n} more times",
    ),
    "retry": (
        "{A}, and if it times out try it again", "{A}; keep at it until it works", "{A} and retry on failure",
        "{A} -- if it errors, give it another go", "{A}, trying again a couple of times if needed",
        "{A} with up to 5 attempts", "{A} and re-run it when it fails",
        "{A}, and if it doesn't go through, try once more", "{A}; on a timeout, repeat it", "{A} and keep retrying",
    ),
    "dependency": (
        "{A}, then use the id from that to {b}", "{A} and pass whatever it returns into {b}",
        "{A}, then {b} with the {p} you got back", "{A}, then call {b} on its output",
        "look up with {a} and plug the result into {b}", "{A}; take the {p} from it and {B}",
        "{A}, and with that answer, {B}", "{A} and then {b} using the first result",
        "{A}, then {b} with whatever {p} comes back", "{A} and hand its result over to {b}",
        "{A}; use what it finds to {b}",
    ),
}

#: Every English word the renderer itself writes. A tool name is never one of them; an argument name or a
#: return property may be one of the common words above (the renderer then never writes that word as a
#: connector beside a value, where a reader could not tell which it is).
PHRASE_WORDS = _phrase_words()


# --- written by people, not by this grammar -----------------------------------------------------------------
# Sentences written by a writer who never read this grammar, in many voices (terse engineers, chatty office
# and shop workers, non-native speakers, experts in finance, science, health, retail), to give what the asker
# says in passing the breadth of people's English: see ``data/README.md``. They are kept as a data file, one
# sentence a line, and are not in ``PHRASE_WORDS``: each is a sentence of its own before or after the
# request, apart from any argument's value, and a rendering that writes one of the catalog's names in one,
# where a reader could take it for a call or an argument beside a value, is dropped as ambiguous like any
# other.


def _data_lines(name: str) -> list[str]:
    text = resources.files("strategies._internal").joinpath("data", name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


#: sentences people write around a request: their situation, reasons, small talk, a complaint, thanks; none
#: asks for anything, and many use the words of unsupported features innocently ("I lost count", "every
#: Monday", "the coffee filter broke")
WRITTEN_ASIDES: tuple[str, ...] = tuple(_data_lines("asides.txt"))

