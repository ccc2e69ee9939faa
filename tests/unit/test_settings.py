import pytest

from nexo.settings import RelayCadence, Settings, SettingsError, check_relay_cadence

BASE = {"DATABASE_URL": "postgresql://localhost/nexo", "REDIS_URL": "redis://localhost:6379/0"}


def test_secret_key_is_required_in_production():
    with pytest.raises(SettingsError, match="SECRET_KEY is required"):
        Settings.from_env(dict(BASE, NEXO_ENV="production"))


def test_demo_runs_without_a_secret_key():
    assert Settings.from_env(dict(BASE, NEXO_ENV="demo")).secret_key


def test_malformed_database_url_is_named():
    with pytest.raises(SettingsError, match="DATABASE_URL"):
        Settings.from_env(dict(BASE, NEXO_ENV="test", DATABASE_URL="mysql://x"))


def test_missing_redis_url_is_named():
    env = dict(BASE, NEXO_ENV="test")
    del env["REDIS_URL"]
    with pytest.raises(SettingsError, match="REDIS_URL is not set"):
        Settings.from_env(env)


def test_fake_url_without_host_is_refused():
    with pytest.raises(SettingsError, match="FISCAL_URL"):
        Settings.from_env(dict(BASE, NEXO_ENV="test", FISCAL_URL="http://"))


def test_unknown_environment_is_refused():
    with pytest.raises(SettingsError, match="NEXO_ENV"):
        Settings.from_env(dict(BASE, NEXO_ENV="staging"))


def test_default_relay_cadence_is_consistent():
    check_relay_cadence(RelayCadence())


@pytest.mark.parametrize(
    "cadence, message",
    [
        (RelayCadence(delivery_timeout_s=10, job_timeout_s=8), "RELAY_JOB_TIMEOUT_S"),
        # rq would kill the job at 5 s, before a valid answer at 4.9 s is recorded (floor, then margins)
        (RelayCadence(delivery_timeout_s=5, job_timeout_s=5.1), "RELAY_JOB_TIMEOUT_S"),
        (RelayCadence(delivery_timeout_s=5, job_timeout_s=5.9), "RELAY_JOB_TIMEOUT_S"),
        (RelayCadence(lease_s=10, job_timeout_s=12), "RELAY_LEASE_S"),
        (RelayCadence(lease_s=30, sweep_interval_s=30), "RELAY_SWEEP_INTERVAL_S"),
        (RelayCadence(max_attempts=0), "RELAY_MAX_ATTEMPTS"),
        (RelayCadence(backoff_base_s=10, backoff_cap_s=5), "RELAY_BACKOFF_BASE_S"),
    ],
)
def test_inconsistent_relay_cadence_stops_start_up(cadence, message):
    with pytest.raises(SettingsError, match=message):
        check_relay_cadence(cadence)


def test_inconsistent_cadence_from_the_environment_is_refused():
    with pytest.raises(SettingsError, match="RELAY_LEASE_S"):
        Settings.from_env(dict(BASE, NEXO_ENV="test", RELAY_LEASE_S="3", RELAY_DELIVERY_TIMEOUT_S="5"))


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_dead_letter_grace_below_one_day_is_refused(value):
    with pytest.raises(SettingsError, match="DEAD_LETTER_GRACE_DAYS"):
        Settings.from_env(dict(BASE, NEXO_ENV="test", DEAD_LETTER_GRACE_DAYS=value))


def test_outbox_retention_is_undefined_by_default():
    assert Settings.from_env(dict(BASE, NEXO_ENV="test")).outbox_retention_days is None


def test_relay_process_settings_are_read_here_with_their_defaults():
    settings = Settings.from_env(dict(BASE, NEXO_ENV="test"))
    assert (settings.relay_queue, settings.relay_wakeup, settings.relay_worker_class) == ("nexo-relay", True, "simple")
    settings = Settings.from_env(dict(BASE, NEXO_ENV="test", RELAY_QUEUE="q2", RELAY_WAKEUP="OFF", RELAY_WORKER_CLASS="fork"))
    assert (settings.relay_queue, settings.relay_wakeup, settings.relay_worker_class) == ("q2", False, "fork")


@pytest.mark.parametrize("name,value", [("RELAY_WAKEUP", "maybe"), ("RELAY_WORKER_CLASS", "threads")])
def test_a_bad_relay_process_setting_is_named(name, value):
    with pytest.raises(SettingsError, match=name):
        Settings.from_env(dict(BASE, NEXO_ENV="test", **{name: value}))


def test_fleet_settings_default_to_one_host_running_every_role():
    settings = Settings.from_env(dict(BASE, NEXO_ENV="test"))
    assert settings.fleet.roles == {"web", "relay", "sweeper", "maintenance", "fakes"}
    assert settings.fleet.web_bind == "127.0.0.1"
    assert settings.fleet.host_id  # the host name
    assert settings.database.migration_url == BASE["DATABASE_URL"]
    assert settings.database.connect_kwargs()["prepare_threshold"] == 5


def test_prepare_threshold_none_turns_prepared_statements_off_for_pgbouncer():
    settings = Settings.from_env(dict(BASE, NEXO_ENV="test", DB_PREPARE_THRESHOLD="none"))
    kwargs = settings.database.connect_kwargs()
    assert kwargs["prepare_threshold"] is None
    assert kwargs["keepalives"] == 1 and kwargs["tcp_user_timeout"] == 15_000


@pytest.mark.parametrize(
    "env, message",
    [
        ({"DB_PREPARE_THRESHOLD": "never"}, "DB_PREPARE_THRESHOLD"),
        ({"NEXO_ROLES": "web,cron"}, "NEXO_ROLES"),
        ({"REDIS_SENTINELS": "127.0.0.1:26379"}, "REDIS_SENTINEL_MASTER"),
        ({"REDIS_SENTINELS": "127.0.0.1", "REDIS_SENTINEL_MASTER": "nexo"}, "REDIS_SENTINELS"),
        ({"DATABASE_MIGRATION_URL": "mysql://x"}, "DATABASE_MIGRATION_URL"),
    ],
)
def test_bad_fleet_settings_stop_start_up_naming_the_setting(env, message):
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(dict(BASE, NEXO_ENV="test", **env))


def test_sentinels_and_roles_are_read():
    env = dict(BASE, NEXO_ENV="test", NEXO_ROLES="relay, sweeper", REDIS_SENTINELS="h1:26379,h2:26380")
    settings = Settings.from_env(dict(env, REDIS_SENTINEL_MASTER="nexo", NEXO_HOST_ID="web-2", WEB_BIND="0.0.0.0"))
    assert settings.fleet.roles == {"relay", "sweeper"}
    assert settings.fleet.redis_sentinels == (("h1", 26379), ("h2", 26380))
    assert (settings.fleet.host_id, settings.fleet.web_bind) == ("web-2", "0.0.0.0")
