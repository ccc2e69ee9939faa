"""Shapes of the login, second factor, password and user forms."""

from flask_wtf import FlaskForm
from wtforms import PasswordField, SelectMultipleField, StringField
from wtforms.validators import DataRequired, Length

from nexo.form_input import RefusesControlCharacters

# The roles a user can hold, as the owner's page names them.
ROLE_LABELS = {"ventas": "Ventas", "credito": "Crédito", "deposito": "Depósito", "dueno": "Dueño/a"}


class LoginForm(RefusesControlCharacters, FlaskForm):
    """Username and password; CSRF comes with FlaskForm."""

    username = StringField("Usuario", validators=[DataRequired("Ingresá tu usuario."), Length(max=64)])
    password = PasswordField("Contraseña", validators=[DataRequired("Ingresá tu contraseña."), Length(max=256)])


class SecondFactorForm(RefusesControlCharacters, FlaskForm):
    """The authenticator app's six digits, or one recovery code."""

    code = StringField("Código", validators=[DataRequired("Ingresá el código."), Length(max=64)])


class PasswordChangeForm(RefusesControlCharacters, FlaskForm):
    """CONTRACT.md: current_password, new_password, new_password_confirm."""

    current_password = PasswordField(
        "Contraseña actual", validators=[DataRequired("Ingresá tu contraseña actual."), Length(max=256)]
    )
    new_password = PasswordField("Contraseña nueva", validators=[DataRequired("Ingresá la contraseña nueva."), Length(max=256)])
    new_password_confirm = PasswordField(
        "Repetí la contraseña nueva", validators=[DataRequired("Repetí la contraseña nueva."), Length(max=256)]
    )


class NewUserForm(RefusesControlCharacters, FlaskForm):
    """CONTRACT.md: username, name and roles (repeatable)."""

    username = StringField("Usuario", validators=[DataRequired("Ingresá el usuario."), Length(max=64)])
    name = StringField("Nombre", validators=[DataRequired("Ingresá el nombre."), Length(max=120)])
    roles = SelectMultipleField("Roles", validate_choice=False)  # drawn as checkboxes by the template


class RolesForm(RefusesControlCharacters, FlaskForm):
    """The roles of one user (repeatable `roles`)."""

    roles = SelectMultipleField("Roles", validate_choice=False)  # drawn as checkboxes by the template


class EnrolForm(RefusesControlCharacters, FlaskForm):
    """The first code the authenticator app shows, proving it holds the secret."""

    code = StringField("Código de la app", validators=[DataRequired("Ingresá el código de 6 dígitos."), Length(max=16)])
