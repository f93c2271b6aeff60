"""Requests written as people write them ("my husband hits me", "i got evicted today"), on the real Miami and SF 211
catalogs: a relevant service in the top 5, every topic a directory of public services lacks still refused, and the
rules of the everyday reading (`topic_match`, the word list's `[everyday]`) on small in-code catalogs.

Each request's acceptable services were checked by hand against the records (their name, description and service
types): the ids in its comment are services that meet the need, in the request's city."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.catalog import built
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.topic_match import CatalogVocabulary
from tracerag.catalog.words import WordList
from tracerag.config import load_settings
from tracerag.errors import ConfigError
from tracerag.eval.catalog_bench import NOT_HELD_TOPICS
from tracerag.trail import read_trail
from tracerag.trail.events import CatalogOutcome

WEDNESDAY = 2  # "today" in a request is a weekday: fixed, so the answers do not depend on the day the suite runs

MIAMI_REQUESTS = [
    # Residential/outpatient substance-use treatment: Safe Haven Recovery "drug and alcohol treatment center",
    # Outpatient Substance Abuse, Residential Inpatient SUD Treatment.
    ("rehab for alcohol, i dont have insurance in miami", {"7240", "841", "1393"}),
    # Adolescent substance-use treatment: Residential Treatment "for adolescent males afflicted with alcohol...",
    # FRSMiami "for adolescents and adults", Children and Family Services (substance use counseling).
    ("my teenage son is using drugs, we live in miami", {"531", "8207", "835"}),
    # Eviction Prevention Legal Assistance (SSVF), Legal Services of Greater Miami.
    ("i got evicted today miami", {"8096", "4109"}),
    # LIHEAP: "financial difficulty with paying home energy bills".
    ("my power is getting shut off in Miami", {"6550", "6591", "6601", "6614", "6656"}),
    ("cant pay my electric bill in Miami", {"6550", "6591", "6601", "6614", "6656"}),
    # HAND program: "assists with rent".
    ("need help paying rent in miami", {"8384", "8385", "8386", "8387", "8390"}),
    # Domestic violence shelters: Safespace North and South, The Lodge.
    ("my husband hits me. miami", {"6726", "6727", "3221"}),
    # Mental Health and Memory Center, adult day centres with Dementia Management.
    ("my mom has alzheimers, miami", {"6521", "1016", "8397"}),
    # Short-term counseling (7478) and community mental health centres with individual therapy.
    # read as a crisis since urgency landed: the 24-hour crisis unit (860) and outpatient therapy (1311) are right too
    ("depressed and need someone to talk to in miami", {"7478", "312", "8897", "860", "1311"}),
    # GED Success "free GED preparation and testing", General Education Development, Turner Tech adult education.
    ("i want to get my GED in miami", {"7783", "1245", "8229", "8219"}),
    # Discount Fare EASY Card for Medicare recipients, Patriot Passport and Golden Passport free transit passes.
    ("bus pass in miami", {"962", "6386", "965"}),
    # Emergency shelters: New Life Emergency Shelter, Men's Lodge, Shelter and Direct Services, HAC1.
    ("somewhere to sleep in miami", {"2854", "156", "1367", "1830"}),
    ("i'm homeless in miami", {"2854", "156", "1367", "1830", "242"}),
    # Glasses Donation Programs (Lions Eye Bank), Eye Care Expense Assistance (Blind Services district office).
    ("i need glasses miami", {"2904", "1379"}),
    # Home Delivered Meals, Home Delivered Hot Meals, Meals on Wheels, AIDS home delivered meals.
    ("meals delivered for my dad in miami", {"819", "7539", "6782", "96"}),
    # CareerSource centres: job search and unemployment benefits.
    ("i lost my job miami", {"772", "763", "769", "762"}),
    # Medical equipment/supplies provision for disabled adults; medical equipment with home care.
    ("need a wheelchair for my grandma in miami", {"187", "2158"}),
    # Medical Appointments Transportation (JTCHC centres, Children's Rehab Network).
    ("i have no car, need a ride to the doctor in miami", {"8007", "8008", "7882"}),
    # Apple Tree "back-to-school clothes and supplies", Free School Supplies.
    ("my kid needs school supplies in Miami", {"8403", "4237", "7647"}),
    # ACCESS offices of the Department of Children and Families: Food Stamps/SNAP applications.
    ("help filling out food stamps miami", {"3373", "3366", "3374"}),
    # Written after the word list was extended (a held-out set; "beats" and "teeth" were added after it failed):
    # Emergency Food Program, Food Distribution "free food every month", Part of the Solution (emergency food).
    ("no food in the house and kids are hungry miami", {"777", "5355", "6332"}),
    ("need to get sober in miami", {"1393", "7240", "841"}),
    # VITA free tax preparation sites.
    ("can someone help me do my taxes for free in miami", {"7566", "7878", "7877"}),
    # The Waki and Sol: "hot Home Delivered Meals - breakfast, lunch, and dinner".
    ("where can my grandpa get a hot lunch in miami", {"5153"}),
    # Love and Care Pregnancy Resources (Formula/Baby Food), South Dade (diapers, baby food for pregnant women).
    ("my wife is pregnant and we need baby formula miami", {"754", "6796"}),
    # New Life Emergency Shelter, Shelter and Direct Services, the Homeless Helpline (shelter referral).
    ("i need a place to stay in miami", {"2854", "1367", "2495"}),
    ("my boyfriend beats me up miami", {"6726", "6727", "3221"}),
    # Dental clinics: JTCHC dental centres, the Medical Campus dental hygiene clinic.
    ("i need my teeth fixed but have no money miami", {"105", "6023", "104"}),
]

SF_REQUESTS = [
    # First Friendship Family Shelter, Rosalie House Emergency Shelter.
    ("somewhere to sleep in san francisco", {"15702642", "10598245"}),
    # Ohlhoff Recovery Programs: "treatment services for individuals with substance abuse problems".
    ("my teenage son is using drugs, san francisco", {"10597394", "10597398", "10597397"}),
    # Tenants Together (tenant rights counseling), the Rent Board.
    ("i got evicted today in San Francisco", {"10596554", "10599234"}),
    # Economic Opportunity Council: "home energy assistance".
    ("my power is getting shut off in San Francisco", {"10602859"}),
    # Asian Women's Shelter, WOMAN Inc. (24-hour crisis line), La Casa de las Madres.
    ("my husband hits me san francisco", {"10597179", "10598672", "10596730"}),
    # Jelani House "outpatient substance abuse treatment", Ohlhoff Recovery Programs.
    ("rehab for alcohol, i dont have insurance, san francisco", {"10596660", "10597394"}),
    # USCIS San Francisco (naturalization, adjustment of status), Chinese Newcomers (immigration services).
    ("help with immigration papers in san francisco", {"10598480", "10601234"}),
    # Career Link centres listed under Discount Transit Passes.
    ("bus pass san francisco", {"10597704", "10597705", "10597706", "10597707", "10597708"}),
    # New Perspectives Center for Counseling, Oak Creek Counseling Center, Mental & Behavioral Health Services.
    ("depressed and need someone to talk to in San Francisco", {"10597314", "10597315", "10597316", "10596459"}),
    # Shelter and Case Management Program ("serves the homeless community"), Rosalie House Emergency Shelter.
    ("i'm homeless in san francisco", {"10600550", "10598245"}),
    # Meals on Wheels of San Francisco, Project Open Hand, the Clearinghouse for Home Delivered Meals.
    ("meals delivered for my dad in san francisco", {"10597044", "10597549", "10601741"}),
    # Eviction Defense Collaborative, under Rent Payment Assistance.
    ("need help paying rent san francisco", {"10602899"}),
    # Latino Parent Center: "free GED, ESL, citizenship ... classes".
    ("i want to get my GED in san francisco", {"10596750"}),
    # Held-out, as for Miami. Tenant rights counseling, the Tenderloin Housing Clinic's Landlord/Tenant Assistance.
    ("my landlord is kicking us out what do i do, san francisco", {"10596554", "10599234", "10596229"}),
    # Emergency food boxes, church soup kitchens and food distribution.
    ("no food in the house and kids are hungry san francisco", {"10595903", "10598399", "10596831"}),
    # Delancey Street: sober living.
    ("need to get sober in san francisco", {"10602818"}),
    # VITA sites.
    ("can someone help me do my taxes for free in san francisco", {"10600849", "10600973", "10600867"}),
    # All Saints' "hot, nourishing lunch each Saturday", Macedonia "hot lunch once a month", the Homeless Church.
    ("where can my grandpa get a hot lunch in san francisco", {"10601398", "10596831", "10598347"}),
    ("i need a place to stay in san francisco", {"15702642", "10598245"}),
    ("my boyfriend beats me up san francisco", {"10597179", "10598672", "10596730"}),
    # University of the Pacific School of Dentistry: dental care by supervised students.
    ("i need my teeth fixed but have no money san francisco", {"10598514"}),
]


@pytest.fixture(scope="module")
def miami(catalog: Path, tmp_path_factory: pytest.TempPathFactory):
    trails = tmp_path_factory.mktemp("trails-miami")
    with CatalogAssistant(catalog, load_settings(), today=WEDNESDAY, trail_dir=trails) as a:
        yield a


@pytest.fixture(scope="module")
def sf211(sf211_catalog: Path, tmp_path_factory: pytest.TempPathFactory):
    trails = tmp_path_factory.mktemp("trails-sf211")
    with CatalogAssistant(sf211_catalog, load_settings(), today=WEDNESDAY, trail_dir=trails) as a:
        yield a


def _top(assistant: CatalogAssistant, request: str) -> list[str]:
    assistant.reset()
    turn = assistant.ask(request)
    assert turn.outcome == CatalogOutcome.ANSWER, (request, turn.reply, turn.to_dict()["topic_match"])
    return [r.record.id for r in turn.offered[:5]]  # an urgent turn offers its lines too (catalog.urgency)


@pytest.mark.parametrize(("request_text", "acceptable"), MIAMI_REQUESTS)
def test_everyday_requests_get_a_relevant_miami_service_in_the_top_5(miami, request_text, acceptable):
    top = _top(miami, request_text)
    assert acceptable & set(top), (request_text, top)


@pytest.mark.parametrize(("request_text", "acceptable"), SF_REQUESTS)
def test_everyday_requests_get_a_relevant_sf211_service_in_the_top_5(sf211, request_text, acceptable):
    top = _top(sf211, request_text)
    assert acceptable & set(top), (request_text, top)


def test_at_least_25_everyday_requests_are_checked():
    assert len(MIAMI_REQUESTS) + len(SF_REQUESTS) >= 25


@pytest.mark.parametrize("which", ["miami", "sf211"])
def test_topics_the_directory_lacks_are_still_refused_when_said_as_people_say_them(request, which):
    """The bench's not-in-catalog topics, each within a person's story ("my husband wants ..."): every one the
    catalog's records do not hold (as the bench checks it) is still refused."""
    assistant: CatalogAssistant = request.getfixturevalue(which)
    place = "Miami" if which == "miami" else "San Francisco"
    refused = 0
    for topic in NOT_HELD_TOPICS:
        if assistant.vocabulary.judge(topic).held:
            continue  # the bench drops it too: some record states it ("dog grooming" in Miami)
        assistant.reset()
        turn = assistant.ask(f"my husband really wants {topic} for my mom in {place}")
        assert turn.outcome == CatalogOutcome.NO_MATCH and not turn.recommendations, (topic, turn.to_dict())
        refused += 1
    assert refused >= 30


def test_story_words_leave_the_topic_and_the_reading_goes_to_the_trail(sf211):
    sf211.reset()
    turn = sf211.ask("i got evicted today in San Francisco")
    assert turn.constraints.topic == "evicted"  # "i", "got" and "today" (a weekday) are not the topic
    sf211.reset()
    turn = sf211.ask("somewhere to sleep in san francisco")
    match = turn.topic_match
    assert match is not None and match.via == "everyday" and match.everyday[0]["said"] == "sleep"
    assert "shelter" in match.everyday[0]["as"]
    events = [e for e in read_trail(sf211.trail_path) if e.kind == "catalog_parse"]
    assert events[-1].topic_match["everyday"] == [{"said": "sleep", "as": ["shelter", "shelters"]}]


# -- the rules, on small catalogs ----------------------------------------------------------------------


def _record(i: int, name: str, description: str = "") -> ServiceRecord:
    return ServiceRecord(id=str(i), service_id=str(i), name=name, description=description)


def _filler(n: int) -> list[ServiceRecord]:
    return [_record(100 + k, f"Office {k}", f"general office number {k}") for k in range(n)]


@pytest.fixture
def small() -> CatalogVocabulary:
    records = [
        _record(1, "Harbor House", "emergency shelter for families"),
        _record(2, "Piano Club", "a youth piano ensemble"),
        _record(3, "Tuning Fork Lab", "acoustics tuning research"),
        _record(4, "Utility Help", "help paying electric and utility bills before disconnection"),
        _record(5, "Newcomer Center", "immigration legal services"),
        *_filler(30),
    ]
    return CatalogVocabulary.build(records, WordList.load("en"))


def test_an_everyday_word_is_read_as_the_records_word(small):
    match = small.judge("sleep")
    assert match.held and match.via == "everyday" and match.holders == {"1"}
    assert match.search_words == ("shelter", "shelters")


def test_an_everyday_phrase_and_another_are_found_together_by_their_record_words(small):
    match = small.judge("power shut off")
    assert match.held and match.via == "everyday" and match.holders == {"4"}, match.to_dict()


def test_the_people_a_request_is_about_are_never_required(small):
    match = small.judge("mom sleep")
    assert match.held and match.holders == {"1"} and "mom" in match.unmatched


def test_one_other_word_is_left_out_only_beside_an_everyday_word(small):
    """The synonym table has "immigration": "papers" may be left out. "piano tuning" has no everyday word:
    both are still required together, whoever the request is about."""
    match = small.judge("immigration papers")
    assert match.held and match.via == "everyday" and match.unmatched == ("papers",)
    for topic in ("piano tuning", "mom piano tuning", "dad piano tuning lessons"):
        assert not small.judge(topic).held, topic


def test_a_record_word_of_several_words_is_refused_naming_the_phrase(tmp_path):
    source = (Path(__file__).parents[2] / "src/tracerag/catalog/words/en.toml").read_text(encoding="utf-8")
    bad = tmp_path / "words.toml"
    bad.write_text(source + '"nowhere to go" = ["homeless shelter"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="nowhere to go"):
        WordList.load("en", bad)


# -- requests the people-written eval found wrongly refused (benchmarks/catalog_people) ------------------------------

REPO = Path(__file__).parents[2]
PEOPLE = REPO / "benchmarks" / "catalog_people"

# (file, conversation id, turn): each request's acceptable ids are the eval's, read against the records by hand
# (the conversation's "made" field says which were read). Every one of these was refused before.
YOUTH_REFUSED = [
    "sfyouth-everyday-004",  # soccer or sports for kids
    "sfyouth-everyday-006",  # my son got arrested ... so he doesnt end up back in juvie
    "sfyouth-typo-004",  # lgbtq yuoth group
    "sfyouth-typo-005",  # tutering for middle schol kids
    "sfyouth-stated-fact-003",  # im 20 and need a job
    "sfyouth-stated-fact-004",  # im 23, any job training programs
    "sfyouth-stated-fact-007",  # my 13 year old keeps getting into fights at school
    "sfyouth-stated-fact-008",  # im 17 and gay, is there a group for me
    "sfyouth-stated-fact-009",  # my mom only speaks cantonese, need after school for my little brother in chinatown
    "sfyouth-restriction-003",  # my son just moved here from china ... doesnt speak english yet
    "sfyouth-restriction-005",  # girls only program for my 14 yr old in the mission
    "sfyouth-restriction-006",  # parenting support for me, i have a toddler and a teenager
    "sfyouth-spanish-004",  # mi hijo ... problemas en la escuela y con la policia
    "sfyouth-spanish-006",  # actividades para mi niño de 4 años
]
SF211_REFUSED = [
    "sf211-typo-004",  # lgbt yuoth center sf
    "sf211-stated-fact-006",  # im 30 and hiv positive, looking for support and maybe a drop in place
    "sf211-stated-fact-008",  # no health insurance and i need cataract surgery, i make like 18k a year
    "sf211-place-004",  # tenant rights help near 94110 (no record of the type there: the records saying it)
    "sf211-paging-006",  # where can i learn english for free / show me more
    "sf211-follow-up-002",  # free meal in the tenderloin / what about on sunday (St Anthony Dining Room: Daily)
    "sf211-follow-up-003",  # clinic for people without insurance / anything open on saturday?
]


def _conversation(file: str, cid: str) -> list[dict]:
    for line in (PEOPLE / file).read_text(encoding="utf-8").splitlines():
        if line.strip() and (c := json.loads(line))["id"] == cid:
            return c["turns"]
    raise AssertionError(f"{cid} not in {file}")


def _answers_every_turn(assistant: CatalogAssistant, file: str, cid: str) -> None:
    """Every turn answered (none refused); the last one, the turn that was refused, with an acceptable id."""
    assistant.reset()
    turns = _conversation(file, cid)
    for k, turn_spec in enumerate(turns):
        turn = assistant.ask(turn_spec["say"])
        assert turn.outcome == CatalogOutcome.ANSWER, (cid, k, turn.reply, turn.to_dict()["topic_match"])
    offered = {r.record.id for r in turn.offered[:5]}
    assert offered & set(turns[-1]["expect"]["acceptable"]), (cid, offered)


@pytest.fixture(scope="module")
def youth(tmp_path_factory: pytest.TempPathFactory):
    target = built.sfyouth(tmp_path_factory, places=True)  # built once per run; this module's own copy
    with CatalogAssistant(target, load_settings(), today=WEDNESDAY, trail_dir=tmp_path_factory.mktemp("t")) as a:
        yield a


@pytest.mark.parametrize("cid", YOUTH_REFUSED)
def test_youth_requests_once_refused_get_an_acceptable_programme(youth, cid):
    _answers_every_turn(youth, "sfyouth.jsonl", cid)


@pytest.mark.parametrize("cid", SF211_REFUSED)
def test_sf211_requests_once_refused_get_an_acceptable_service(sf211, cid):
    _answers_every_turn(sf211, "sf211.jsonl", cid)


def test_topics_the_youth_directory_lacks_are_still_refused(youth):
    refused = 0
    for topic in NOT_HELD_TOPICS:
        if youth.vocabulary.judge(topic).held:
            continue
        for said in (f"{topic} for my son", f"my husband really wants {topic} for my mom in San Francisco"):
            youth.reset()
            turn = youth.ask(said)
            assert turn.outcome == CatalogOutcome.NO_MATCH and not turn.recommendations, (said, turn.to_dict())
        refused += 1
    assert refused >= 30


def test_a_language_inside_a_service_phrase_is_not_a_language(sf211):
    sf211.reset()
    turn = sf211.ask("where can i learn english for free")
    assert not [s for s in turn.constraints.structural if s.kind.value == "language"], turn.to_dict()
    sf211.reset()
    turn = sf211.ask("food pantry where they speak english")
    assert [s.values for s in turn.constraints.structural if s.kind.value == "language"] == [("English",)]


def test_no_record_of_the_service_type_there_gives_the_records_stating_the_topic(sf211):
    sf211.reset()
    turn = sf211.ask("tenant rights help near 94110")
    assert [r.record.id for r in turn.recommendations] == ["10597901"]  # SF Tenants Union: "rights as tenants"
    assert any(n.startswith("service type") and "tenant rights" in n for n in turn.notes), turn.notes


def test_a_topic_of_only_who_it_is_for_is_held(small):
    match = small.judge("little brother")
    assert match.held and match.via == "no_specific_words"


def test_one_word_is_left_out_beside_an_everyday_word_never_two(small):
    """ "sleep quux" holds ("quux" left out); "sleep zorblax quux" does not: with "sports car rental" (every word but
    "sports" unknown to a youth directory) two left out would make anything held by its everyday word alone."""
    match = small.judge("sleep quux")
    assert match.held and match.via == "everyday" and match.unmatched == ("quux",)
    for topic in ("sleep zorblax quux", "sports car rental", "piano quux"):
        assert not small.judge(topic).held, topic
