"""Shape of the login form."""

from flask_wtf import FlaskForm
from wtforms import PasswordField, StringField
from wtforms.validators import DataRequired, Length

from nexo.form_input import RefusesControlCharacters


class LoginForm(RefusesControlCharacters, FlaskForm):
    """Username and password; CSRF comes with FlaskForm."""

    username = StringField("Usuario", validators=[DataRequired("Ingresá tu usuario."), Length(max=64)])
    password = PasswordField("Contraseña", validators=[DataRequired("Ingresá tu contraseña."), Length(max=256)])
