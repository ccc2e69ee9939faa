"""SMTP_URL and the MAIL_* settings: read once at start-up, a malformed value refused by name, no password echoed."""

from __future__ import annotations

import pytest

from nexo.mail.sender import backoff_s, message_id
from nexo.settings import MailSettings, SettingsError, mail_settings

pytestmark = pytest.mark.no_db


def test_no_smtp_url_means_mail_is_off():
    assert mail_settings({}) is None
    assert mail_settings({"SMTP_URL": "  "}) is None


@pytest.mark.parametrize(
    ("url", "security", "port"),
    [
        ("smtp://mail.example.com", "plain", 25),
        ("smtp+starttls://mail.example.com", "starttls", 587),
        ("smtps://mail.example.com", "tls", 465),
    ],
)
def test_each_scheme_has_its_security_and_default_port(url, security, port):
    mail = mail_settings({"SMTP_URL": url})
    assert (mail.host, mail.security, mail.port, mail.username, mail.password) == ("mail.example.com", security, port, None, None)


def test_user_and_percent_encoded_password_are_decoded_and_the_password_is_not_in_the_repr():
    mail = mail_settings({"SMTP_URL": "smtps://avisos%40nexo.ar:p%40ss%3Aw0rd@smtp.example.com:2465"})
    assert (mail.username, mail.password, mail.port) == ("avisos@nexo.ar", "p@ss:w0rd", 2465)
    assert "p@ss" not in repr(mail)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://u:hunter2@mail.example.com", "scheme 'http'"),
        ("mail.example.com:25", "scheme 'none'"),
        ("smtp://u:hunter2@mail.example.com:99999", "port"),
        ("smtp://u:hunter2@mail.example.com:abc", "port"),
        ("smtp://u:hunter2@", "no host"),
        ("smtp://u:hunter2@mail.example.com/path", "end after host:port"),
        ("smtp://:hunter2@mail.example.com", "password but no user"),
    ],
)
def test_a_malformed_smtp_url_is_refused_by_name_without_its_password(url, says):
    with pytest.raises(SettingsError) as refused:
        mail_settings({"SMTP_URL": url})
    message = str(refused.value)
    assert "SMTP_URL" in message and says in message
    assert "hunter2" not in message


def test_bad_mail_cadences_and_sender_are_refused():
    with pytest.raises(SettingsError, match="MAIL_BACKOFF_BASE_S"):
        mail_settings({"SMTP_URL": "smtp://h", "MAIL_BACKOFF_BASE_S": "10", "MAIL_BACKOFF_CAP_S": "5"})
    with pytest.raises(SettingsError, match="MAIL_FROM"):
        mail_settings({"SMTP_URL": "smtp://h", "MAIL_FROM": "nobody"})
    with pytest.raises(SettingsError, match="SMTP_TIMEOUT_S"):
        mail_settings({"SMTP_URL": "smtp://h", "SMTP_TIMEOUT_S": "soon"})


def test_the_lease_outlasts_a_whole_send_and_backoff_doubles_up_to_the_cap():
    mail = MailSettings(host="h", port=25, security="plain", timeout_s=10, backoff_base_s=30, backoff_cap_s=100)
    assert mail.lease_s > 7 * mail.timeout_s  # connect, EHLO, AUTH, MAIL, RCPT, DATA, the final reply
    assert [backoff_s(n, mail) for n in (1, 2, 3, 4)] == [30, 60, 100, 100]


def test_the_message_id_is_derived_from_the_key_and_differs_between_keys():
    sender = "Nexo <avisos@nexo.example>"
    assert message_id("credit-waiting:1:user:3", sender) == message_id("credit-waiting:1:user:3", sender)
    assert message_id("credit-waiting:1:user:3", sender) != message_id("credit-waiting:1:user:4", sender)
    assert message_id("k", sender).endswith("@nexo.example>")
