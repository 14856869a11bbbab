"""The stand-in answers a stage it has no rules for (a shop's own) from the JSON Schema the
request carries: valid for the stage's model, the same every time, over HTTP through the SDK."""

from __future__ import annotations

import enum
import re
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal
from uuid import UUID

import anthropic
import pytest
from pydantic import AnyUrl, BaseModel, ConfigDict, Field

from baton_kafka.agents.models.parsing import output_schema, schema_text
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.agents.testing.standin.from_schema import (
    SchemaAnswerError,
    answer_from_schema,
    from_pattern,
    hints,
)
from examples.stages.priority import Priority


class Line(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d{4}$")
    quantity: int = Field(ge=1, le=9)
    gift: bool = False


class Risk(BaseModel):
    """A shop's risk stage: nested objects, arrays, bounds, enums, optional and nullable."""

    model_config = ConfigDict(extra="forbid")

    score: float = Field(gt=0.25, lt=0.75)
    level: Literal["low", "medium", "high"]
    tags: list[Literal["fraud", "repeat", "vip"]] = Field(min_length=2, max_length=3)
    lines: list[Line] = Field(min_length=1)
    note: str = Field(min_length=12, max_length=40)
    code: str = Field(pattern=r"^R\d+$", min_length=4)
    follow_up: int | None
    count: int = Field(gt=10, multiple_of=5)
    negative: int = Field(lt=-3)
    when: datetime
    day: date
    ref: UUID
    words: dict[str, int]
    skipped: str | None = None


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Shapes(BaseModel):
    """Tuples, sets, decimals, enums, constants, steps and maps of models."""

    pair: tuple[int, str]
    tags: set[Literal["a", "b", "c"]] = Field(min_length=2)
    price: Decimal = Field(gt=0, max_digits=6, decimal_places=2)
    color: Color
    yes: Literal[True]
    n: Literal[3, 4]
    ratio: float = Field(ge=0, le=1, multiple_of=0.25)
    step: int = Field(multiple_of=7, ge=20, lt=30)
    grid: list[list[int]] = Field(min_length=1)
    by_name: dict[str, Line]
    skus: list[Annotated[str, Field(pattern=r"^S\d{2}$")]] = Field(min_length=2)
    wait: timedelta
    at: time
    url: AnyUrl


class Tree(BaseModel):
    name: str
    children: list[Tree] = Field(max_length=0)


class Cycle(BaseModel):
    again: Cycle


MODELS: list[type[BaseModel]] = [Priority, Risk, Line, Shapes, Tree]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("shape", ["as sent", "plain"])
def test_an_answer_built_from_the_schema_is_valid_and_the_same_each_time(
    model: type[BaseModel], shape: str
) -> None:
    # As sent: the SDK moves bounds into the descriptions; plain: bounds as keywords.
    schema = output_schema(model) if shape == "as sent" else model.model_json_schema()
    answer = answer_from_schema(schema)
    model.model_validate(answer)
    assert answer_from_schema(schema) == answer


def test_the_answer_keeps_to_required_fields_and_the_first_choices() -> None:
    answer = answer_from_schema(output_schema(Risk))
    assert "skipped" not in answer and answer["follow_up"] == 0
    assert answer["level"] == "low" and answer["tags"] == ["fraud", "repeat"]
    assert answer["lines"] == [{"sku": "AAA-0000", "quantity": 1}]
    assert 0.25 < answer["score"] < 0.75 and answer["count"] == 15 and answer["negative"] == -4
    assert 12 <= len(answer["note"]) <= 40 and answer["words"] == {}


def test_the_sdks_description_hints_are_read() -> None:
    assert hints("Why.\n\n{maxLength: 200}") == {"maxLength": 200}
    assert hints("{maximum: 9, minimum: 3}") == {"maximum": 9, "minimum": 3}
    assert hints("{minLength: 5, pattern: ^[A-Z]+, [0-9]+$}") == {
        "minLength": 5,
        "pattern": "^[A-Z]+, [0-9]+$",
    }
    assert hints("A price {in cents}") == {}


@pytest.mark.parametrize(
    ("pattern", "min_length"),
    [
        (r"^O-\d{4,}$", 0),
        (r"^(?:gid://shopify/Order/)?\d+$", 0),
        (r"^[a-z]+$", 8),
        (r"(foo|bar)baz?", 0),
        (r"^[^a0]x\w\s\S$", 0),
        (r"^\w+@\w+\.(com|org)$", 0),
        (r"^[A-Z]{2}\d{2}[A-Z0-9]{4}\d{7}([A-Z0-9]?){0,16}$", 0),
    ],
)
def test_a_string_is_built_for_a_pattern(pattern: str, min_length: int) -> None:
    made = from_pattern(pattern, 0, min_length)
    assert re.search(pattern, made) and len(made) >= min_length, made


def test_a_schema_that_requires_itself_is_refused_in_words() -> None:
    with pytest.raises(SchemaAnswerError, match="requires itself"):
        answer_from_schema(Cycle.model_json_schema())


@pytest.fixture
async def standin() -> Any:
    async with StandIn() as server:
        yield server


async def test_over_http_a_stage_without_rules_gets_a_valid_answer(standin: StandIn) -> None:
    client = anthropic.AsyncAnthropic(
        api_key="sk-test-not-a-real-key", base_url=standin.base_url, max_retries=0
    )
    try:
        for model in (Priority, Risk):
            message = await client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=1024,
                system="You tag tickets.",
                messages=[{"role": "user", "content": "My kettle is leaking!!"}],
                output_config={"format": {"type": "json_schema", "schema": output_schema(model)}},
            )
            (block,) = message.content
            assert block.type == "text"
            model.model_validate_json(block.text)
        # A provider without structured output: the schema is stated in the system prompt.
        message = await client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=1024,
            system="You tag tickets." + schema_text(output_schema(Priority)),
            messages=[{"role": "user", "content": "My kettle is leaking!!"}],
        )
        (block,) = message.content
        assert block.type == "text"
        Priority.model_validate_json(block.text)
    finally:
        await client.close()
    stats = standin.stats()
    assert stats["calls"] == 3 and {r["status"] for r in stats["requests"]} == {200}
