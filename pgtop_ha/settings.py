"""Settings: frozen pydantic models loaded from TOML, then ``PGTOP_HA_*`` env, then CLI flags."""

from __future__ import annotations

import os
import re
import stat
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from pgtop_ha.errors import ConfigError
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.sections import ConsoleSections, Judging, Mode
from pgtop_ha.models.thresholds import Thresholds
from pgtop_ha.models.trust import check_host_pattern
from pgtop_ha.models.urls import haproxy_stats_url, patroni_root, redact

ENV_PREFIX = "PGTOP_HA_"
MAX_CONFIG_BYTES = 1024 * 1024  # a config file is a few KB; /dev/zero must not fill memory
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_flag(value: Any) -> bool:
    """A boolean from TOML, env or flags: only 1/0, true/false, yes/no, on/off (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise ValueError(f"{value!r} is not a boolean; write true or false (also 1/0, yes/no, on/off)")


# Fail closed: a safety switch that doesn't parse is an error, never a silent false.
Flag = Annotated[bool, BeforeValidator(parse_flag)]
Hosts = tuple[Annotated[str, BeforeValidator(check_host_pattern)], ...]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodeSettings(_Section):
    """One node given explicitly instead of discovered from Patroni's /cluster."""

    name: str = Field(min_length=1, description="Member name as Patroni knows it.")
    host: str = Field(min_length=1, description="PostgreSQL host.")
    port: int = Field(5432, ge=1, le=65535, description="PostgreSQL port.")
    dbname: str | None = Field(None, description="Database to connect to (default: postgres.dbname).")
    patroni_url: str | None = Field(None, description="This member's Patroni REST URL.")

    @field_validator("patroni_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else patroni_root(value)


def _pair(user: str | None, password_file: Path | None, what: str) -> None:
    """A login is a user and its password file, both or neither (ValueError naming the one missing)."""
    if (user is None) != (password_file is None):
        given, missing = ("user", "password_file") if user is not None else ("password_file", "user")
        raise ValueError(f"{given} is set without {missing}; set both ({what}) or neither")


class TLSSettings(_Section):
    """TLS for https URLs, the same on the read and the write path (system CA store by default)."""

    ca_file: Path | None = Field(None, description="CA bundle (PEM) instead of the system store.")
    certfile: Path | None = Field(None, description="Client certificate (PEM) for mutual TLS.")
    keyfile: Path | None = Field(None, description="Client certificate's key (PEM).")
    verify: Flag = Field(True, description="Verify TLS certificates (keep on).")

    @model_validator(mode="after")
    def _pair(self) -> TLSSettings:
        if self.keyfile is not None and self.certfile is None:
            raise ValueError("keyfile is set without certfile; set both or neither")
        return self


class PatroniSettings(TLSSettings):
    """Where Patroni's REST API is and how to reach it."""

    urls: tuple[str, ...] = Field((), description="Any member's REST URL; members come from /cluster.")
    user: str | None = Field(None, description="REST user, used only by the write path.")
    password_file: Path | None = Field(None, description="File holding the REST password.")
    timeout: float = Field(2.0, gt=0, le=60, description="Seconds per REST request.")
    calm_interval: float = Field(
        5.0,
        ge=0,
        le=60,
        description="Seconds between /cluster GETs, and each member's own /patroni GET, while calm (0:"
        " every cycle; every cycle anyway while a PostgreSQL is not answering or slow or a REST API is not"
        " answering, and for 30 s after a member's role, state or timeline or a server's status in HAProxy"
        " changed).",
    )
    allowed_hosts: Hosts = Field((), description="CIDRs/host names REST requests may go to (empty: any).")

    @field_validator("urls")
    @classmethod
    def _urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(patroni_root(u) for u in value))


class PostgresSettings(_Section):
    """How to connect to each node's PostgreSQL (passwords only via libpq conventions)."""

    enabled: Flag = Field(
        True, description="Read each member's PostgreSQL (false, --no-postgres: Patroni and HAProxy alone)."
    )
    user: str | None = Field(None, description="Role to read with; pg_monitor is enough.")
    dbname: str = Field("postgres", description="Database to connect to.")
    passfile: Path | None = Field(None, description="A .pgpass file (else PGPASSFILE / ~/.pgpass).")
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] | None = Field(
        None, description="libpq sslmode (else PGSSLMODE)."
    )
    sslrootcert: Path | None = Field(None, description="CA for verify-ca/verify-full.")
    connect_timeout: float = Field(3.0, gt=0, le=60, description="Seconds to connect.")
    statement_timeout_ms: int = Field(2000, ge=100, description="statement_timeout of read sessions.")
    operator_user: str | None = Field(None, description="Role for stats resets (default: user).")
    allowed_hosts: Hosts = Field((), description="CIDRs/host names PostgreSQL connections may go to.")
    allow_cleartext_password: Flag = Field(
        False, description="Send a password to a server asking for it in clear text without TLS."
    )


class HAProxySettings(TLSSettings):
    """Where HAProxy's stats are: an HTTP CSV URL and/or a unix socket."""

    url: str | None = Field(None, description="Stats page URL; ';csv' is added when missing.")
    socket: Path | None = Field(None, description="Stats socket path (`show stat`).")
    writer_backends: tuple[str, ...] = Field(
        ("writer", "primary", "master", "rw"),
        description="Writer backends: names containing one of these (1-2 letters: as a whole word).",
    )
    reader_backends: tuple[str, ...] = Field(
        ("reader", "replica", "standby", "ro"),
        description="Reader backends: names containing one of these (1-2 letters: as a whole word).",
    )
    timeout: float = Field(2.0, gt=0, le=60, description="Seconds per stats request.")
    user: str | None = Field(
        None, min_length=1, description="Stats page user, when HAProxy asks for one (`stats auth`)."
    )
    password_file: Path | None = Field(None, description="File holding the stats page password.")
    members: dict[str, str] = Field(
        default_factory=dict,
        max_length=256,
        description='Server name to Patroni member, for servers not named as members: {"pg-a" = "node1"}.',
    )

    @field_validator("members")
    @classmethod
    def _members(cls, value: dict[str, str]) -> dict[str, str]:
        for server, member in value.items():
            if not server.strip() or not member.strip():
                raise ValueError('an empty server or member name; write "server" = "member"')
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else haproxy_stats_url(value)

    def pools(self) -> Pools:
        """The writer and reader backend patterns, as the models tell pools apart."""
        return Pools(self.writer_backends, self.reader_backends)

    @model_validator(mode="after")
    def _login(self) -> HAProxySettings:
        _pair(self.user, self.password_file, "the stats page's login")
        return self


class PgBackRestSettings(_Section):
    """The pgBackRest source: `pgbackrest info --output=json` and the local async spool."""

    enabled: Flag | None = Field(
        None,
        description="Read pgBackRest (unset: only when the nodes are local and the binary and config exist).",
    )
    command: tuple[str, ...] = Field(
        ("pgbackrest",),
        min_length=1,
        description='Program and arguments, e.g. ["ssh", "db1", "pgbackrest"] (argv).',
    )
    config: Path | None = Field(
        None, description="pgbackrest.conf (default /etc/pgbackrest/pgbackrest.conf)."
    )
    stanza: str | None = Field(None, description="Only this stanza (default: every stanza).")
    spool_path: Path | None = Field(None, description="Async spool (default: the config's spool-path).")
    timeout: float = Field(10.0, gt=0, le=300, description="Seconds `pgbackrest info` may take.")
    interval: float = Field(15.0, ge=1, le=3600, description="Seconds between two `pgbackrest info` runs.")


class LabSettings(_Section):
    """Where `pgtop-ha lab` puts its sandbox cluster."""

    base_port: int = Field(25400, ge=1024, le=65000, description="First of the lab's ports.")
    state_dir: Path | None = Field(None, description="Lab data and PIDs (default per user).")


_LABEL = r"^[A-Za-z_][A-Za-z0-9_]*$"  # a Prometheus label name (it is written into PromQL)


class FleetCluster(_Section):
    """A per-cluster override for the fleet's drill down."""

    patroni: tuple[str, ...] = Field((), description="Patroni REST URLs (default: the metrics' instances).")
    config: Path | None = Field(None, description="This cluster's own console config (credentials, HAProxy).")


class FleetSettings(TLSSettings):
    """The fleet view: many clusters read through Prometheus (or Thanos, Mimir, VictoriaMetrics)."""

    prometheus: str | None = Field(
        None, description="Query API base URL, with any path: http://127.0.0.1:9090, https://h/prometheus."
    )
    user: str | None = Field(None, description="Basic auth user for the query API.")
    password_file: Path | None = Field(None, description="File holding the basic auth password.")
    bearer_token_file: Path | None = Field(None, description="File holding a bearer token for the query API.")
    scope_label: str = Field("scope", pattern=_LABEL, description="Label naming the cluster.")
    name_label: str = Field("name", pattern=_LABEL, description="Label naming the member.")
    writer_backend: str = Field("pg_writer", pattern=r'^[^"\\\n]+$', description="HAProxy writer backend.")
    selector: str = Field("", description='Extra PromQL matchers, e.g. job="patroni".')
    interval: float | None = Field(None, ge=1, le=600, description="Refresh seconds (default: scrape).")
    allowed_hosts: Hosts = Field((), description="Hosts Prometheus and drill downs may go to (empty: any).")
    clusters: dict[str, FleetCluster] = Field(default_factory=dict, description="Per-cluster overrides.")
    alert_for: dict[str, Annotated[int, Field(ge=0, le=86400)]] = Field(
        default_factory=dict,
        description='`for:` seconds of `fleet rules` alerts, by rule id: {"patroni.paused" = 600}.',
    )

    @model_validator(mode="after")
    def _login(self) -> FleetSettings:
        _pair(self.user, self.password_file, "basic auth")
        if self.user is not None and self.bearer_token_file is not None:
            raise ValueError("both basic auth (user) and bearer_token_file are set; keep one")
        return self


class ProbeEndpoint(_Section):
    """One endpoint applications connect through (HAProxy's writer/reader port, a pooler)."""

    name: str = Field(min_length=1, max_length=64, description="Name shown in the Probes pane.")
    host: str = Field(min_length=1, description="Host to connect to (subject to postgres.allowed_hosts).")
    port: int = Field(ge=1, le=65535, description="Port to connect to.")
    dbname: str | None = Field(None, description="Database (default: postgres.dbname).")
    kind: Literal["writer", "reader", "pooler"] = Field("writer", description="What the endpoint is for.")


_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?")


class ProbeSettings(_Section):
    """Client probes: a new connection and one short query per cycle through each endpoint."""

    endpoints: tuple[ProbeEndpoint, ...] = Field((), description="Endpoints to probe each cycle.")
    enabled: Flag = Field(True, description="Probe the endpoints (on when any is listed).")
    timeout: float = Field(2.0, gt=0, le=60, description="Seconds per probe (connect + query).")
    calm_interval: float = Field(
        15.0,
        ge=0,
        le=60,
        description="Seconds between read probes while all is calm (0: every cycle; every cycle anyway"
        " for 30 s after a probe error, a probe answered by another server or a server's status"
        " change in HAProxy, and while a node, HAProxy's stats or a pooler's admin console is not"
        " answering).",
    )
    write_table: str | None = Field(
        None, description="Operator only: INSERT a row per cycle into this existing table (--probe-writes)."
    )

    @field_validator("write_table")
    @classmethod
    def _table(cls, value: str | None) -> str | None:
        if value is not None and not _TABLE.fullmatch(value):
            raise ValueError(f"{value!r} is not a table name; write table or schema.table (identifiers)")
        return value

    @model_validator(mode="after")
    def _unique(self) -> ProbeSettings:
        names = [e.name for e in self.endpoints]
        if len(set(names)) != len(names):
            raise ValueError("endpoint names must be unique")
        return self


class PoolerSettings(_Section):
    """A pooler's admin source (host subject to postgres.allowed_hosts; password via the passfile)."""

    name: str = Field(min_length=1, max_length=64, description="Name shown in the pane.")
    host: str = Field(min_length=1, description="Host of the pooler's client port.")
    port: int = Field(ge=1, le=65535, description="The pooler's client port.")
    user: str | None = Field(None, description="Role to log in as (default: postgres.user).")
    timeout: float = Field(2.0, gt=0, le=60, description="Seconds per read (connect + commands).")


class PgBouncerSettings(PoolerSettings):
    """One pgBouncer's admin console, read as a stats_users role: SHOW POOLS, DATABASES, STATS."""

    dbname: str = Field("pgbouncer", description="The admin console's database name.")


class PgpoolSettings(PoolerSettings):
    """One pgpool-II: SHOW pool_nodes and pool_processes through its client port."""

    dbname: str | None = Field(None, description="Database to log in to (default: postgres.dbname).")


def _unique_names(items: tuple[PoolerSettings, ...], what: str) -> None:
    names = [i.name for i in items]
    if len(set(names)) != len(names):
        raise ValueError(f"{what} names must be unique")


class Settings(_Section):
    """All of pgtop-ha's settings."""

    cluster_name: str | None = Field(None, description="Cluster (Patroni scope) name.")
    interval: float = Field(1.0, ge=0.2, le=60, description="Seconds between polls.")
    theme: str = Field("dark", description="Theme name from themes/ (dark, light, mono).")
    read_only: Flag | None = Field(None, description="true: no action exists; unset: auto (SSH).")
    max_members: int = Field(64, ge=1, le=1000, description="Members polled at most; more is a problem.")
    audit_log: Path | None = Field(None, description="Where actions are appended.")
    patroni: PatroniSettings = Field(default_factory=PatroniSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)
    haproxy: HAProxySettings = Field(default_factory=HAProxySettings)
    probes: ProbeSettings = Field(default_factory=ProbeSettings)
    pgbouncer: tuple[PgBouncerSettings, ...] = Field((), description="pgBouncers to read ([[pgbouncer]]).")
    pgpool: tuple[PgpoolSettings, ...] = Field((), description="pgpool-IIs to read ([[pgpool]]).")
    nodes: tuple[NodeSettings, ...] = ()
    thresholds: Thresholds = Field(default_factory=Thresholds)
    pgbackrest: PgBackRestSettings = Field(default_factory=PgBackRestSettings)
    lab: LabSettings = Field(default_factory=LabSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)
    patroni_password: SecretStr | None = Field(
        None, exclude=True, repr=False, description="From PGTOP_HA_PATRONI_PASSWORD only."
    )
    # Where read_only was set ("command line", "environment", "config file PATH"): the mode's reason.
    _read_only_from: str | None = PrivateAttr(None)

    def judging(self) -> Judging:
        """What a session judges and paces by (its thresholds, HAProxy's pools, the interval)."""
        return Judging(thresholds=self.thresholds, pools=self.haproxy.pools(), interval=self.interval)

    def console(self) -> ConsoleSections:
        """What the console reads of these settings."""
        return ConsoleSections(judging=self.judging(), theme=self.theme, cluster_name=self.cluster_name)

    @model_validator(mode="after")
    def _unique_poolers(self) -> Settings:
        _unique_names(self.pgbouncer, "[[pgbouncer]]")
        _unique_names(self.pgpool, "[[pgpool]]")
        return self

    def probe_endpoints(self) -> tuple[ProbeEndpoint, ...]:
        """The endpoints to probe: those listed, then each pooler's client port not listed already.

        A configured pgBouncer or pgpool-II is an endpoint applications use: it is probed by
        default (as a pooler, in postgres.dbname), so its client view sits beside its admin view.
        """
        listed = list(self.probes.endpoints)
        seen = {(e.host, e.port) for e in listed}
        names = {e.name for e in listed}
        for pooler in (*self.pgbouncer, *self.pgpool):
            if (pooler.host, pooler.port) in seen:
                continue
            name = pooler.name if pooler.name not in names else f"{pooler.name} (client)"
            listed.append(ProbeEndpoint(name=name, host=pooler.host, port=pooler.port, kind="pooler"))
            seen.add((pooler.host, pooler.port))
            names.add(name)
        return tuple(listed)

    @property
    def read_only_from(self) -> str | None:
        """Which source set read_only, or None when nobody did."""
        return self._read_only_from

    def patroni_secret(self) -> SecretStr | None:
        """The REST password (env, else password_file); for the write path only."""
        if self.patroni_password is not None:
            return self.patroni_password
        if self.patroni.password_file is None:
            return None
        return _secret_file(self.patroni.password_file, "patroni.password_file", "the REST password")

    def haproxy_login(self) -> tuple[str, SecretStr] | None:
        """The stats page's user and password (haproxy.password_file), or None when not set."""
        h = self.haproxy
        if h.user is None or h.password_file is None:
            return None
        return h.user, _secret_file(h.password_file, "haproxy.password_file", "the stats page's password")

    def prometheus_login(self) -> tuple[str, str | None, SecretStr] | None:
        """("Basic", user, password) or ("Bearer", None, token) for the query API, or None."""
        f = self.fleet
        if f.bearer_token_file is not None:
            return "Bearer", None, _secret_file(f.bearer_token_file, "fleet.bearer_token_file", "the token")
        if f.user is not None and f.password_file is not None:
            return "Basic", f.user, _secret_file(f.password_file, "fleet.password_file", "the password")
        return None


def _secret_file(path: Path, key: str, what: str) -> SecretStr:
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(
            f"{key} {path}: {exc.strerror}; point it at a readable file holding {what}"
        ) from None
    if not text:
        raise ConfigError(f"{key} {path} is empty; write {what} in it")
    return SecretStr(text)


# Short env names people expect; everything else is PGTOP_HA_<SECTION>__<KEY>.
_ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "CLUSTER_NAME": ("cluster_name",),
    "INTERVAL": ("interval",),
    "THEME": ("theme",),
    "READ_ONLY": ("read_only",),
    "AUDIT_LOG": ("audit_log",),
    "PATRONI": ("patroni", "urls"),
    "PATRONI_URLS": ("patroni", "urls"),
    "PATRONI_USER": ("patroni", "user"),
    "PATRONI_PASSWORD_FILE": ("patroni", "password_file"),
    "HAPROXY": ("haproxy", "url"),
    "HAPROXY_URL": ("haproxy", "url"),
    "HAPROXY_SOCKET": ("haproxy", "socket"),
    "HAPROXY_USER": ("haproxy", "user"),
    "HAPROXY_PASSWORD_FILE": ("haproxy", "password_file"),
    "PG_USER": ("postgres", "user"),
    "PG_DBNAME": ("postgres", "dbname"),
    "PATRONI_PASSWORD": ("patroni_password",),
}
_LIST_KEYS = {
    ("patroni", "urls"),
    ("patroni", "allowed_hosts"),
    ("postgres", "allowed_hosts"),
    ("haproxy", "writer_backends"),
    ("haproxy", "reader_backends"),
    ("pgbackrest", "command"),
}


def default_config_paths() -> list[Path]:
    """Where a config file is looked for when --config is not given: the user's config only.

    Never the current directory: a file dropped there must not change the mode or the audit log.
    """
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [home / "pgtop-ha" / "config.toml"]


def _read_toml(path: Path) -> dict[str, Any]:
    if str(path) == os.devnull:
        return {}  # `--config /dev/null`: no file at all, the usual way to say so
    try:
        # Opened without blocking and checked before reading: a FIFO or a device would hang or never end.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; check --config or create it") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory; give the TOML file's path") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror}; make it readable") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"config file {path} is no regular file (a FIFO, a device?); give a TOML file")
        return _parse_toml(path, fh)


def _parse_toml(path: Path, fh: BinaryIO) -> dict[str, Any]:
    try:
        raw = fh.read(MAX_CONFIG_BYTES + 1)
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory; give the TOML file's path") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror}; make it readable") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than 1 MiB; is it really a pgtop-ha TOML file?")
    try:
        return tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: not valid TOML ({exc}); fix the syntax") from None


def _strict_numbers(model: type[BaseModel], data: Mapping[str, Any], source: str, at: str = "") -> None:
    """A string where the file must give a number is an error: TOML says what type a value is."""
    for key, value in data.items():
        info = model.model_fields.get(key)
        if info is None:
            continue  # an unknown key: the model's own validation names it
        where = f"{at}{key}"
        args = typing.get_args(info.annotation) or (info.annotation,)
        sections = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if sections and isinstance(value, Mapping):
            _strict_numbers(sections[0], value, source, f"{where}.")
        elif isinstance(value, str) and any(a in (int, float) for a in args):
            raise ConfigError(f"{source}: {where} = {value!r} is text; write the number without quotes")


def _set(tree: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        node = tree.setdefault(key, {})
        if not isinstance(node, dict):
            node = tree[key] = {}
        tree = node
    tree[keys[-1]] = value


def _env_keys(name: str) -> tuple[str, ...]:
    rest = name[len(ENV_PREFIX) :]
    return _ENV_ALIASES.get(rest) or tuple(k.lower() for k in rest.split("__"))


def _env_source(exc: ValidationError, environ: Mapping[str, str]) -> str:
    """The environment variable behind the first error (so the message names what to fix)."""
    loc = tuple(str(p) for p in exc.errors()[0]["loc"])
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX) and value.strip():
            keys = _env_keys(name)
            if loc[: len(keys)] == keys or keys[: len(loc)] == loc:
                return f"environment {name}"
    return "environment PGTOP_HA_*"


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        if not value.strip():
            continue  # an empty value means "unset", never false
        keys = _env_keys(name)
        if keys in _LIST_KEYS:
            _set(tree, keys, [v.strip() for v in value.split(",") if v.strip()])
        else:
            # Booleans are parsed (strictly) by the models' Flag type.
            _set(tree, keys, value)
    return tree


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _describe(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{source}: unknown key {loc!r}; remove it or check its spelling in config/example.toml"
    msg = redact(str(err["msg"]).removeprefix("Value error, "))
    got = err.get("input")
    shown = "" if isinstance(got, dict | list | tuple) or got is None else f" (got {redact(repr(got))})"
    if isinstance(got, str) and redact(got) in msg:
        shown = ""  # the message already quotes it
    return f"{source}: {loc}: {msg}{shown}; fix the value of {loc}"


def load_settings(
    config: Path | None = None,
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the TOML file, ``PGTOP_HA_*`` env and CLI overrides into frozen Settings."""
    environ = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    source = "defaults"
    path = config
    if path is None:
        path = next((p for p in default_config_paths() if p.is_file()), None)
    if path is not None:
        data = _read_toml(path)
        source = f"config file {path}"
        if "patroni_password" in data:
            raise ConfigError(
                f"{source}: key 'patroni_password' is not read from files; use "
                "PGTOP_HA_PATRONI_PASSWORD or patroni.password_file"
            )
    _strict_numbers(Settings, data, source)
    try:
        Settings.model_validate({k: v for k, v in data.items() if k != "patroni_password"})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from None
    env = _env_overrides(environ)
    merged = _merge(data, env)
    try:
        Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, _env_source(exc, environ))) from None
    merged = _merge(merged, cli or {})
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, "command line")) from None
    if cli and "read_only" in cli:
        settings._read_only_from = "command line"
    elif "read_only" in env:
        settings._read_only_from = "environment"
    elif "read_only" in data:
        settings._read_only_from = source
    return settings


def resolve_mode(settings: Settings, environ: Mapping[str, str]) -> Mode:
    """Read-only unless asked otherwise; inside SSH only --operator or a config file's false act."""
    ssh = bool(environ.get("SSH_CONNECTION") or environ.get("SSH_TTY"))
    chosen, origin = settings.read_only, settings.read_only_from
    short = {"command line": "flag", "environment": "env"}.get(origin or "", "config")
    if chosen is True:
        shown = "--read-only" if origin == "command line" else origin or "settings"
        return Mode(True, f"read-only: set by {shown}", short)
    if chosen is False and ssh and origin == "environment":
        # An env var is too easy to inherit by accident on a bastion: SSH needs a deliberate choice.
        why = "read-only: SSH session (PGTOP_HA_READ_ONLY=false does not count there; use --operator)"
        return Mode(True, why, "SSH")
    if chosen is False:
        shown = "--operator" if origin == "command line" else origin or "settings"
        return Mode(False, f"operator: set by {shown}", short)
    if ssh:
        return Mode(True, "read-only: SSH session (start with --operator to act)", "SSH")
    return Mode(False, "operator: not an SSH session (--read-only to disable actions)", "default")


def recorded_settings(header: dict[str, Any], theme: str) -> Settings:
    """Settings to watch a recording or a serve with: its thresholds and pools, the local theme."""
    found = header.get("settings")
    recorded: dict[str, Any] = found if isinstance(found, dict) else {}
    found = recorded.get("haproxy")
    haproxy: dict[str, Any] = found if isinstance(found, dict) else {}
    tree: dict[str, Any] = {
        "cluster_name": recorded.get("cluster_name"),
        "interval": recorded.get("interval", 1.0),
        "thresholds": recorded.get("thresholds", {}),
        "haproxy": {k: haproxy[k] for k in ("writer_backends", "reader_backends") if k in haproxy},
        "read_only": True,
    }
    try:
        return Settings.model_validate({**tree, "theme": theme})
    except ValueError:
        # A recording from another version may not fit: judge with today's defaults instead.
        return Settings.model_validate({"theme": theme, "read_only": True})
