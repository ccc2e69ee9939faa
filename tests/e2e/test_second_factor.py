"""The second factor (ADR-018): TOTP enrolment with recovery codes shown once, the code asked at login,
and MFA_REQUIRED=on for the people who move money and data."""

from __future__ import annotations

import re
import time

import pyotp

from tests.e2e.account_support import app_with, is_logged_in, login, post_form


def enrol(client) -> tuple[str, list[str]]:
    """Enrol the logged-in user: read the secret off the page, answer with its code; return secret and codes."""
    page = client.get("/account/mfa").get_data(as_text=True)
    assert "<svg" in page and "data-totp-qr" in page
    secret = re.search(r"data-totp-secret>([A-Z2-7]+)<", page).group(1)
    # The previous step's code (accepted for a drifting phone clock): the current one stays unused for a login.
    done = post_form(client, "/account/mfa", "/account/mfa", {"code": pyotp.TOTP(secret).at(time.time() - 30)})
    assert done.status_code == 303
    overview = client.get(done.headers["Location"]).get_data(as_text=True)
    codes = re.findall(r"data-recovery-code>([^<]+)<", overview)
    assert len(codes) == 10 and 'data-mfa-enrolled="true"' in overview
    # 80 random bits each (ADR-018): 16 base32 letters, and no two alike.
    assert all(re.fullmatch(r"[a-z2-7]{4}(-[a-z2-7]{4}){3}", c) for c in codes) and len(set(codes)) == 10, codes
    assert "data-recovery-code" not in client.get("/account").get_data(as_text=True)  # shown once
    return secret, codes


def second_factor(client, code: str):
    return post_form(client, "/login/second-factor", "/login/second-factor", {"code": code})


def test_an_enrolled_user_needs_the_code_after_the_password(app):
    marta = app.test_client()
    login(marta, "marta")
    secret, _ = enrol(marta)
    other = app.test_client()
    response = login(other, "marta")
    assert response.status_code == 302 and response.headers["Location"].endswith("/login/second-factor")
    assert not is_logged_in(other)  # the password alone opened nothing
    assert second_factor(other, "000000").status_code == 401
    assert second_factor(other, pyotp.TOTP(secret).now()).status_code == 302
    assert is_logged_in(other)


def test_a_code_is_good_once_and_a_recovery_code_too(app):
    marta = app.test_client()
    login(marta, "marta")
    secret, codes = enrol(marta)
    code = pyotp.TOTP(secret).now()
    first, second = app.test_client(), app.test_client()
    login(first, "marta")
    assert second_factor(first, code).status_code == 302
    login(second, "marta")
    assert second_factor(second, code).status_code == 401  # replayed
    assert second_factor(second, codes[0]).status_code == 302
    third = app.test_client()
    login(third, "marta")
    assert second_factor(third, codes[0]).status_code == 401  # a recovery code works once
    fourth = app.test_client()
    login(fourth, "marta")
    assert second_factor(fourth, codes[1].upper().replace("-", "")).status_code == 302  # in capitals, no dashes


def test_with_mfa_required_money_and_data_people_must_enrol_before_anything_else(db):
    app = app_with(mfa_required=True)
    try:
        laura, seller = app.test_client(), app.test_client()
        login(laura, "laura")
        response = laura.get("/credit/queue")
        assert response.status_code == 302 and response.headers["Location"].endswith("/account/mfa")
        login(seller, "vendedor1")
        assert seller.get("/orders/new").status_code == 200  # sales moves neither money nor data
        enrol(laura)
        assert laura.get("/credit/queue").status_code == 200
    finally:
        app.extensions["nexo.db"].close()


def test_without_the_setting_the_demo_logins_need_no_second_factor(client):
    assert login(client, "marta").status_code == 302
    assert client.get("/ops").status_code == 200
