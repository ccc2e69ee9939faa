"""Everyone's own account: password change, open sessions ("cerrar mis otras sesiones"), second factor."""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, render_template, session, url_for
from flask_login import current_user

from nexo.auth import accounts, mfa, sessions
from nexo.auth import login as signing
from nexo.auth.forms import EnrolForm, PasswordChangeForm
from nexo.extensions import get_db

bp = Blueprint("account", __name__)


@bp.route("/account")
def overview():
    """The person's open sessions, with the button that closes the others, and their second factor."""
    with get_db().reading() as conn:
        live = sessions.live_of_user(conn, current_user.id, signing.limits())
    return render_template("account/overview.html", sessions=live, codes=session.pop("recovery_codes", None))


@bp.route("/account/sessions/close-others", methods=["POST"])
def close_other_sessions():
    """End every other session of this user (a phone left logged in, a shared computer)."""
    ended = accounts.close_other_sessions(get_db(), user=current_user._get_current_object())
    flash(f"Cerramos {ended} sesión(es) abiertas en otros equipos." if ended else "No tenías otras sesiones abiertas.", "info")
    return redirect(url_for("account.overview"), code=303)


@bp.route("/account/password", methods=["GET", "POST"])
def change_password():
    """Change one's own password (the current one required); the other sessions end."""
    form = PasswordChangeForm()
    if form.validate_on_submit():
        result = accounts.change_password(
            get_db(),
            user=current_user._get_current_object(),
            current=form.current_password.data or "",
            new=form.new_password.data or "",
            confirm=form.new_password_confirm.data or "",
        )
        match result:
            case accounts.Done():
                flash("Tu contraseña cambió. Cerramos tus otras sesiones.", "info")
                return redirect(url_for("account.overview"), code=303)
            case accounts.Invalid(errors):
                for name, message in errors.items():
                    getattr(form, name).errors = [message]
            case accounts.NotFound():
                return redirect(url_for("auth.login"))
        return render_template("account/password.html", form=form), 400
    status = 400 if form.is_submitted() else 200
    return render_template("account/password.html", form=form), status


@bp.route("/account/mfa", methods=["GET", "POST"])
def enrol_second_factor():
    """Enrol an authenticator app: a QR code, then its first code; recovery codes shown once."""
    if current_user.mfa_enrolled:
        return redirect(url_for("account.overview"))
    form = EnrolForm()
    secret = session.get("totp_pending") or mfa.new_secret()
    session["totp_pending"] = secret  # in the signed cookie until enrolled: it is this person's own secret
    if form.validate_on_submit():
        codes = mfa.enrol(get_db(), current_user._get_current_object(), secret, form.code.data or "")
        if codes is not None:
            session.pop("totp_pending", None)
            session["recovery_codes"] = codes
            return redirect(url_for("account.overview"), code=303)
        form.code.errors = ["El código no coincide: revisá la hora del teléfono y probá con el próximo."]
    status = 400 if form.is_submitted() else 200
    required = current_app.config["NEXO_SETTINGS"].security.mfa_required and mfa.required_for(current_user)
    return render_template(
        "account/mfa.html", form=form, qr=mfa.qr_svg(secret, current_user.username), secret=secret, required=required
    ), status
