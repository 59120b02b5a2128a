"""SQLAlchemy 2 and Alembic unchanged (issue 31, acceptance 3).

One model of several tables uses identity keys, foreign keys, unique and check
constraints, server defaults, indexes and jsonb, numeric and timestamptz columns (an enum
column has a model of its own). ``metadata.create_all`` builds it on the server under
test and on a private PostgreSQL 15 in the same test; then ``sqlalchemy.inspect`` must reflect the same
tables, columns, keys, indexes, constraints and enums from both, Alembic's autogenerate
comparison must find no differences, and ORM session work (inserts, updates, deletes,
joined and select-in relationship loading, ``INSERT … ON CONFLICT DO UPDATE``) must give
the same rows on both.
"""

from __future__ import annotations

import datetime
import decimal

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql


class Base(orm.DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "sqla_author"
    __table_args__ = (
        sa.CheckConstraint("balance >= 0", name="sqla_author_balance_nonneg"),
        sa.Index("sqla_author_email_lower", "email"),
    )

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, sa.Identity(), primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(50), unique=True)
    email: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    balance: orm.Mapped[decimal.Decimal] = orm.mapped_column(
        sa.Numeric(12, 2), server_default="0")
    prefs: orm.Mapped[dict | None] = orm.mapped_column(postgresql.JSONB)
    joined: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime(timezone=True), server_default=sa.func.now())

    posts: orm.Mapped[list[Post]] = orm.relationship(
        back_populates="author", order_by="Post.id", cascade="all, delete-orphan")


class Post(Base):
    __tablename__ = "sqla_post"
    __table_args__ = (
        sa.UniqueConstraint("author_id", "title", name="sqla_post_author_title"),
        sa.Index("sqla_post_author_score", "author_id", "score"),
    )

    id: orm.Mapped[int] = orm.mapped_column(
        sa.BigInteger, sa.Identity(always=True), primary_key=True)
    author_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("sqla_author.id", ondelete="CASCADE"))
    title: orm.Mapped[str] = orm.mapped_column(sa.String(200))
    score: orm.Mapped[int] = orm.mapped_column(sa.Integer, server_default="0")
    published: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime(timezone=True))

    author: orm.Mapped[Author] = orm.relationship(back_populates="posts")
    tags: orm.Mapped[list[Tag]] = orm.relationship(
        secondary="sqla_post_tag", order_by="Tag.label")


class Tag(Base):
    __tablename__ = "sqla_tag"

    label: orm.Mapped[str] = orm.mapped_column(sa.String(30), primary_key=True)
    weight: orm.Mapped[decimal.Decimal] = orm.mapped_column(
        sa.Numeric(5, 1), sa.CheckConstraint("weight > 0"), server_default="1.0")


post_tag = sa.Table(
    "sqla_post_tag", Base.metadata,
    sa.Column("post_id", sa.BigInteger, sa.ForeignKey("sqla_post.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("tag_label", sa.String(30), sa.ForeignKey("sqla_tag.label"), primary_key=True),
)

TABLES = ["sqla_author", "sqla_post", "sqla_post_tag", "sqla_tag"]


def engine_for(server):
    return sa.create_engine(server.url.replace("postgresql://", "postgresql+psycopg://"))


def created(metadata, servers):
    """Engines on `servers` with `metadata` freshly created on each."""
    engines = [engine_for(s) for s in servers]
    for e in engines:
        metadata.drop_all(e)
        metadata.create_all(e)
    return engines


@pytest.fixture
def engines(postgres_fresh, target):
    """Engines on the reference and the server under test, the model freshly created."""
    engines = created(Base.metadata, (postgres_fresh, target))
    yield engines
    for e in engines:
        Base.metadata.drop_all(e)
        e.dispose()


def comparable(value):
    """Reflected values with their column types as text (types compare by identity)."""
    if isinstance(value, sa.types.TypeEngine):
        return repr(value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return value


def reflected(engine, prefix="sqla_"):
    """What SQLAlchemy's inspector reads of the tables named `prefix`…"""
    insp = sa.inspect(engine)
    tables = sorted(t for t in insp.get_table_names() if t.startswith(prefix))
    out = {"tables": tables, "enums": insp.get_enums()}
    for t in tables:
        out[t] = {
            "columns": insp.get_columns(t),
            "pk": insp.get_pk_constraint(t),
            "fks": insp.get_foreign_keys(t),
            "indexes": insp.get_indexes(t),
            "uniques": insp.get_unique_constraints(t),
            "checks": insp.get_check_constraints(t),
        }
    return comparable(out)


def test_inspect_reflects_as_postgres(engines):
    ref, got = (reflected(e) for e in engines)
    assert ref["tables"] == TABLES
    for key in ref:
        assert got[key] == ref[key], key


def no_differences(engine, metadata):
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), metadata) == []


def test_alembic_autogenerate_finds_no_differences(engines):
    assert all(no_differences(e, Base.metadata) for e in engines)


def orm_work(engine):
    """Session work of every kind the acceptance names; returns what each step read."""
    seen = []
    with orm.Session(engine) as s:
        ann = Author(name="ann", email="ann@example.org",
                     balance=decimal.Decimal("10.50"), prefs={"theme": "dark", "n": [1, 2]})
        bob = Author(name="bob", prefs=None)
        s.add_all([ann, bob, Tag(label="db"), Tag(label="rust", weight=decimal.Decimal("2.5"))])
        s.flush()
        seen.append(("ids", ann.id, bob.id))
        t = datetime.datetime(2026, 11, 28, 12, 30, tzinfo=datetime.timezone.utc)
        ann.posts = [Post(title="first", score=3, published=t), Post(title="second")]
        bob.posts = [Post(title="hello", score=7)]
        s.flush()
        ann.posts[0].tags = [s.get(Tag, "db"), s.get(Tag, "rust")]
        bob.posts[0].tags = [s.get(Tag, "rust")]
        s.commit()

        # server defaults came back as PostgreSQL sets them
        s.refresh(bob)
        seen.append(("defaults", bob.balance, bob.joined is not None))

        bob.balance += decimal.Decimal("1.25")
        ann.prefs = {**ann.prefs, "lang": "en"}
        s.commit()

        # a check constraint violated: the same SQLSTATE
        bob.balance = decimal.Decimal("-1")
        with pytest.raises(sa.exc.IntegrityError) as err:
            s.flush()
        seen.append(("check", err.value.orig.sqlstate))
        s.rollback()

        s.delete(s.scalars(sa.select(Post).where(Post.title == "second")).one())
        s.commit()

    with orm.Session(engine) as s:
        authors = s.scalars(
            sa.select(Author).options(orm.joinedload(Author.posts).joinedload(Post.tags))
            .order_by(Author.name)).unique().all()
        seen.append([(a.name, a.balance, a.prefs,
                      [(p.title, p.score, p.published, [t.label for t in p.tags])
                       for p in a.posts]) for a in authors])
        posts = s.scalars(sa.select(Post).options(
            orm.selectinload(Post.author), orm.selectinload(Post.tags))
            .order_by(Post.score.desc())).all()
        seen.append([(p.title, p.author.name, [t.label for t in p.tags]) for p in posts])
        seen.append(s.execute(
            sa.select(Author.name, sa.func.count(), sa.func.sum(Post.score)).join(Post)
            .group_by(Author.name).order_by(Author.name)).all())
        seen.append(s.execute(sa.select(Author.name).where(
            Author.prefs["theme"].astext == "dark")).all())

    with orm.Session(engine) as s:
        upsert = postgresql.insert(Tag).values(
            [{"label": "db", "weight": decimal.Decimal("9.0")},
             {"label": "sql", "weight": decimal.Decimal("4.0")}])
        upsert = upsert.on_conflict_do_update(
            index_elements=[Tag.label], set_={"weight": upsert.excluded.weight + 1})
        s.execute(upsert)
        ann_id = s.scalars(sa.select(Author.id).where(Author.name == "ann")).one()
        nothing = postgresql.insert(Author).values(id=ann_id, name="ann2").on_conflict_do_nothing(
            index_elements=[Author.id]).returning(Author.id)
        seen.append(("nothing", s.execute(nothing).all()))
        s.commit()
        seen.append(s.execute(sa.select(Tag.label, Tag.weight).order_by(Tag.label)).all())

        # deleting an author cascades to its posts and their tag links
        s.execute(sa.delete(Author).where(Author.name == "ann"))
        s.commit()
        seen.append(s.execute(sa.select(sa.func.count()).select_from(post_tag)).scalar())
        seen.append(s.execute(sa.select(Post.title)).all())
    return seen


def test_orm_session_work_as_postgres(engines):
    ref, got = (orm_work(e) for e in engines)
    assert got == ref


# An enum column, in a model of its own.
class EnumBase(orm.DeclarativeBase):
    pass


class MoodEntry(EnumBase):
    __tablename__ = "sqlamood_entry"
    __table_args__ = (sa.Index("sqlamood_entry_mood", "mood"),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, sa.Identity(), primary_key=True)
    mood: orm.Mapped[str] = orm.mapped_column(
        sa.Enum("sad", "ok", "happy", name="sqlamood"), server_default="ok")


def test_enum_column_as_postgres(postgres_fresh, target):
    engines = created(EnumBase.metadata, (postgres_fresh, target))
    try:
        ref, got = (reflected(e, "sqlamood_") for e in engines)
        assert ref["enums"] == [{"name": "sqlamood", "schema": "public", "visible": True,
                                 "labels": ["sad", "ok", "happy"]}]
        assert got == ref
        assert all(no_differences(e, EnumBase.metadata) for e in engines)
        seen = []
        for e in engines:
            with orm.Session(e) as s:
                s.add_all([MoodEntry(mood=m) for m in ("happy", "sad", "ok", "happy")]
                          + [MoodEntry()])
                s.commit()
                seen.append([
                    s.execute(sa.select(MoodEntry.id, MoodEntry.mood)
                              .order_by(MoodEntry.mood, MoodEntry.id)).all(),
                    s.scalars(sa.select(MoodEntry.id).where(MoodEntry.mood > "ok")
                              .order_by(MoodEntry.id)).all(),
                    s.execute(sa.select(sa.func.min(MoodEntry.mood),
                                        sa.func.max(MoodEntry.mood))).one(),
                ])
                with pytest.raises(sa.exc.DataError) as err:
                    s.execute(sa.text("INSERT INTO sqlamood_entry (mood) VALUES ('meh')"))
                seen.append(err.value.orig.sqlstate)
        assert seen[2:] == seen[:2]
    finally:
        for e in engines:
            EnumBase.metadata.drop_all(e)
            e.dispose()


REFLECTION_STATEMENTS = [
    "DROP TABLE IF EXISTS sqlarefl",
    "CREATE TABLE sqlarefl (id int PRIMARY KEY, a int DEFAULT '0', b bigint DEFAULT '0', "
    "n numeric(5,1) DEFAULT '1.0', m numeric DEFAULT '2', f boolean DEFAULT 'yes', "
    "g int DEFAULT '-1', arr int[], UNIQUE (b, a))",
    "CREATE INDEX sqlarefl_gf ON sqlarefl (g, f)",
    # a quoted constant default as PostgreSQL deparses it
    "SELECT attname, pg_get_expr(adbin, adrelid) FROM pg_attrdef "
    "JOIN pg_attribute ON attrelid = adrelid AND attnum = adnum "
    "WHERE adrelid = 'sqlarefl'::regclass",
    # set-returning functions over one array in a select list
    "INSERT INTO sqlarefl (id, arr) VALUES (1, ARRAY[10, 20, 30]), (2, '{}'), (3, NULL)",
    "SELECT id, unnest(arr) AS v, generate_subscripts(arr, 1) AS i FROM sqlarefl",
    "SELECT id, unnest(arr) FROM sqlarefl WHERE id < 3",
    "SELECT unnest(ARRAY['x', 'y']), 1",
    "SELECT DISTINCT unnest(ARRAY[2, 1, 2])",
    # int2vector subscripts start at 0
    "SELECT c.relname, unnest(i.indkey) AS attnum, generate_subscripts(i.indkey, 1) AS ord "
    "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "WHERE i.indrelid = 'sqlarefl'::regclass",
    "SELECT array_lower(indkey, 1), array_upper(indkey, 1), indkey[0] FROM pg_index "
    "WHERE indrelid = 'sqlarefl'::regclass",
    "SELECT conname, unnest(conkey), generate_subscripts(conkey, 1) FROM pg_constraint "
    "WHERE conrelid = 'sqlarefl'::regclass",
    "DROP TABLE sqlarefl",
]

REGCLASS_PARAMETERS = [
    ("SELECT %s::regclass = 'pg_catalog.pg_class'::regclass", ("pg_catalog.pg_class",)),
    ("SELECT CAST(%s AS regclass)::text", ("public.sqlarefl_id_id_seq",)),
    ("SELECT CAST(%s AS regclass)::text", ("sqlarefl_id_id_seq",)),
    ("SELECT CAST(%s AS regclass)::text", ("no_such_relation",)),
    ("SELECT relname FROM pg_class WHERE oid = to_regclass(%s)", ("public.sqlarefl_id_id_seq",)),
    ("SELECT c.relname FROM pg_class c WHERE c.relname = 'sqlarefl_id_id_seq' "
     "AND c.oid = CAST(pg_get_serial_sequence('sqlarefl_id', 'id') AS regclass)", None),
]


def test_reflection_statements_as_postgres(postgres_fresh, target):
    """The statements behind SQLAlchemy's reflection, one feature each."""
    from test_indexes import outcome
    pair = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres_fresh, target)]
    try:
        for sql in REFLECTION_STATEMENTS:
            got = [outcome(c, sql) for c in pair]
            assert got[1] == got[0], sql
        for c in pair:
            c.execute("DROP TABLE IF EXISTS sqlarefl_id")
            c.execute("CREATE TABLE sqlarefl_id (id int GENERATED BY DEFAULT AS IDENTITY "
                      "PRIMARY KEY)")
        for sql, params in REGCLASS_PARAMETERS:
            got = [outcome(c, sql, params) for c in pair]
            assert got[1] == got[0], sql
        for c in pair:
            c.execute("DROP TABLE sqlarefl_id")
    finally:
        for c in pair:
            c.close()


def test_upsert_on_unique_column_as_postgres(engines):
    seen = []
    for e in engines:
        with orm.Session(e) as s:
            s.add(Author(name="ann", email="a@example.org"))
            s.commit()
            upsert = postgresql.insert(Author).values(name="ann", email="new@example.org")
            upsert = upsert.on_conflict_do_update(
                index_elements=[Author.name], set_={"email": upsert.excluded.email})
            s.execute(upsert)
            s.commit()
            seen.append(s.execute(sa.select(Author.name, Author.email)).all())
    assert seen[1] == seen[0]
