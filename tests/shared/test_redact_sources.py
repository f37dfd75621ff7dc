"""Secrets written in source code (shared/redact/sources.py and the literal forms of
shared/redact/assignments.py): prefixed and triple-quoted string literals, subscripts
and calls that name a credential in a string, setters, credential calls with positional
arguments, SQL, PowerShell's SecureString, Go's MySQL DSN and name/value pairs."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
KEY = "k7Hq2WmZ9xPb4LrT8vNc3Yds"  # fake, 24 random base62 characters

# (text, the secret in it, its label)
SOURCES = [
    # a string literal's prefix or triple quotes are no value of their own
    (f"password = r'{PW}'", PW, "password"),
    (f'db_password = b"{PW2}"', PW2, "password"),
    (f'API_KEY = f"{KEY}"', KEY, "api_key"),
    (f"token = rb'{KEY}'", KEY, "token"),
    (f'var password = @"{PW}";', PW, "password"),
    (f"PASSWORD = '''{PW}'''", PW, "password"),
    (f'secret = """{KEY}"""', KEY, "secret"),
    # a subscript, or a call, that names the credential in a string
    (f"os.environ['DB_PASSWORD'] = '{PW}'", PW, "password"),
    (f'os.environ["OPENAI_API_KEY"] = "{KEY}"', KEY, "api_key"),
    (f'config["password"] = "{PW2}"', PW2, "password"),
    (f"ENV['SECRET_TOKEN'] = '{KEY}'", KEY, "token"),
    (f"$_ENV['DB_PASS'] = '{PW}';", PW, "password"),
    (f"define('DB_PASSWORD', '{PW}');", PW, "password"),
    (f"define( 'AUTH_KEY', '{KEY}' );", KEY, "credential"),
    (f'os.Setenv("GITHUB_TOKEN", "{KEY}")', KEY, "token"),
    (f'localStorage.setItem("access_token", "{KEY}");', KEY, "token"),
    (f'props.put("mail.smtp.password", "{PW2}");', PW2, "password"),
    (f'req.Header.Set("X-Api-Key", "{KEY}")', KEY, "api_key"),
    # setters and builders named for the credential
    (f'user.setPassword("{PW}");', PW, "password"),
    (f'builder.password("{PW2}")', PW2, "password"),
    (f'.withPassword("{PW}")', PW, "password"),
    (f'cfg.SetPassword("{PW}")', PW, "password"),
    (f"client.set_api_key('{KEY}')", KEY, "api_key"),
    (f'Stripe.setApiKey("{KEY}");', KEY, "api_key"),
    # a call that takes a user and a password, or a host, a user and a password
    (f'requests.get(url, auth=("bob", "{PW}"))', PW, "password"),
    (f'requests.post(u, auth=HTTPBasicAuth("bob", "{PW2}"))', PW2, "password"),
    (f'httpx.BasicAuth(username="bob", password="{PW}")', PW, "password"),
    (f'aiohttp.BasicAuth("bob", "{PW}")', PW, "password"),
    (f'smtp.login("me@example.com", "{PW}")', PW, "password"),
    (f"ftp.login('bob', '{PW2}')", PW2, "password"),
    (f'server.login(user, "{PW}")', PW, "password"),
    (f'new NetworkCredential("bob", "{PW}")', PW, "password"),
    (f'req.SetBasicAuth("bob", "{PW2}")', PW2, "password"),
    (f'new UsernamePasswordCredentials("bob", "{PW}")', PW, "password"),
    (f'mysqli_connect("localhost", "root", "{PW}", "app");', PW, "password"),
    (f'$db = new PDO($dsn, "root", "{PW2}");', PW2, "password"),
    (f'DriverManager.getConnection(url, "sa", "{PW}");', PW, "password"),
    (f"pymysql.connect('db.internal', 'app', '{PW}', 'shop')", PW, "password"),
    # SQL
    (f"CREATE USER bob WITH PASSWORD '{PW}';", PW, "password"),
    (f"ALTER ROLE app WITH LOGIN ENCRYPTED PASSWORD '{PW2}';", PW2, "password"),
    (f"CREATE USER 'bob'@'%' IDENTIFIED BY '{PW}';", PW, "password"),
    (
        f"ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{PW2}';",
        PW2,
        "password",
    ),
    (f"GRANT ALL ON *.* TO 'bob'@'%' IDENTIFIED BY \"{PW}\";", PW, "password"),
    (f"CREATE USER scott IDENTIFIED BY {PW};", PW, "password"),
    (f"SET PASSWORD FOR 'bob'@'%' = PASSWORD('{PW2}');", PW2, "password"),
    # PowerShell: the literal made a SecureString
    (f'$pw = ConvertTo-SecureString "{PW}" -AsPlainText -Force', PW, "password"),
    (
        f"$c = New-Object PSCredential('admin', (ConvertTo-SecureString '{PW2}' -AsPlainText))",
        PW2,
        "password",
    ),
    (f"ConvertTo-SecureString -String '{PW}' -AsPlainText -Force", PW, "password"),
    # Go's MySQL driver DSN: user:password@tcp(host)/db, no scheme
    (f'sql.Open("mysql", "root:{PW}@tcp(127.0.0.1:3306)/app")', PW, "password"),
    (f'dsn := "app:{PW2}@unix(/tmp/mysql.sock)/db"', PW2, "password"),
    # a name and a value given as two fields (Kubernetes env, JSON, CloudFormation)
    (f"- name: DB_PASSWORD\n  value: {PW}", PW, "password"),
    (f'env:\n  - name: API_TOKEN\n    value: "{KEY}"', KEY, "token"),
    (f'{{"name": "DB_PASSWORD", "value": "{PW2}"}}', PW2, "password"),
    (f'{{"Name": "stripe_api_key", "Value": "{KEY}"}}', KEY, "api_key"),
    (f'{{"key": "password", "value": "{PW}"}}', PW, "password"),
    (f"ParameterKey=MasterUserPassword,ParameterValue={PW}", PW, "password"),
    (f'name = "DB_PASSWORD"\nvalue = "{PW2}"', PW2, "password"),
    # a literal wrapped in parentheses, on the next line (a formatter's line break)
    (f'password = (\n    "{PW}"\n)', PW, "password"),
    (f"DB_PASSWORD = (\n    '{PW2}'\n)", PW2, "password"),
    (f'api_key: str = ("{KEY}")', KEY, "api_key"),
]

# Code and prose that name a credential and hold none.
SOURCE_PROSE = [
    "password = (\n    get_password()\n)",
    "token = (yield)",
    "password = ()",
    "os.environ['DB_PASSWORD'] = password",
    'os.environ["API_KEY"] = os.environ["OLD_KEY"]',
    "config['password'] = ''",
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));",
    'os.Setenv("GITHUB_TOKEN", token)',
    "user.setPassword(password);",
    "user.setPassword(hash(raw));",
    'keyring.get_password("service", "bob")',
    'vault.get_secret("db-password")',
    'store.load_key("id_rsa")',
    "user.set_password(form.cleaned_data['password1'])",
    'requests.get(url, auth=("bob", password))',
    'smtp.login(user, os.environ["SMTP_PASSWORD"])',
    "server.login(user, pw)",
    'mysqli_connect("localhost", "root", $password, "app");',
    "DriverManager.getConnection(url, user, pass);",
    "CREATE USER bob WITH PASSWORD :pw;",
    "ALTER USER bob WITH PASSWORD NULL;",
    "the suspect was identified by a witness",
    "they were identified by their badge numbers",
    "$pw = Read-Host -AsSecureString",
    "$pw = ConvertTo-SecureString $env:PW -AsPlainText -Force",
    "$cred = Get-Credential",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db",
    '{"name": "DB_PASSWORD", "value": ""}',
    '{"name": "password", "value": "${DB_PASSWORD}"}',
    '{"name": "session_timeout", "value": "3600"}',
    "ParameterKey=DbPassword,UsePreviousValue=true",
    'fields = ["username", "password", "token"]',
    'sql.Open("mysql", dsn)',
    '_run([ray_executable(), "get-auth-token", "--generate"], env)',
    '_KEY = r"(?P<key>[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS',
    "SECRET_PATTERN = r'\\d{6}-[A-Z]{4}'",
    "MySQL's ``IDENTIFIED BY <pw>`` (unquoted)",
    'dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", user, pass, host, db)',
    'localStorage.setItem("theme", "dark");',
    "define('DB_NAME', 'wordpress');",
    "user.setPassword(encoder.encode(raw));",
    'getPassword("prod-db")',
    "the user is identified by their email address",
    "- name: LOG_LEVEL\n  value: debug",
    "login(user, password)",
    'print("login", "failed")',
    "login('bob', 'failed')",
]


@pytest.mark.parametrize(("text", "secret", "label"), SOURCES, ids=[s[0][:32] for s in SOURCES])
def test_a_secret_in_source_code_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# A call whose password is its n-th argument, as each library's signature puts it;
# the user before it stays (Go's PlainAuth kept the password and redacted the user).
POSITIONAL = [
    f'auth := smtp.PlainAuth("", "bob@example.com", "{PW}", "smtp.gmail.com")',
    f'auth := smtp.PlainAuth("", user, "{PW}", host)',
    f"Net::SMTP.start('smtp.example.com', 587, 'example.com', 'bob', '{PW}', :login)",
    f"smtp.start('example.com', 'bob', '{PW}', :login)",
    f'ftp = ftplib.FTP("ftp.example.com", "bob", "{PW}")',
    f'ftp = FTP_TLS("ftp.example.com", "bob", "{PW}")',
    f'client.connect("bastion", 22, "deploy", "{PW}")',
    f'transport.connect("smtp.example.com", 587, "bob", "{PW}");',
    f'$ok = ftp_login($conn, "bob", "{PW}");',
    f'ssh2_auth_password($session, "bob", "{PW}");',
    f'ldap_bind($ds, "cn=admin,dc=example,dc=com", "{PW}");',
    f'keyring.set_password("system", "bob", "{PW}")',
    f'mgr.add_password(None, "https://example.com", "bob", "{PW}")',
    f'$db = new mysqli("localhost", "bob", "{PW}", "app");',
    f"const db = new Sequelize('app', 'bob', '{PW}', {{ dialect: 'mysql' }});",
    f'new UsernamePasswordAuthenticationToken("bob", "{PW}")',
    f'client.Authenticate("bob@example.com", "{PW}");',
    f'let creds = Credentials::new("bob".to_string(), "{PW}".to_string());',
    f'conn.simple_bind_s("cn=admin,dc=example,dc=com", "{PW}")',
    f'pop.pass_("{PW}")',
    f'Net::FTP.open("ftp.example.com", "bob", "{PW}")',
    f'cx_Oracle.connect("scott", "{PW}", "localhost/orclpdb")',
]
POSITIONAL_PROSE = [
    'smtp.login(user, "%(password)s")',
    'auth := smtp.PlainAuth("", from, password, host)',
    'server.start("localhost", 8080, "index.html")',
    'job.start(ctx, "worker", "main")',
    "smtp.start('example.com', 'bob', password, :login)",
    "ftp_login($conn, $user, $pass)",
    'keyring.set_password("svc", "bob", getpass())',
    'conn = psycopg2.connect(host, 5432, "app", password)',
    'db.connect("localhost", 3306)',
    'self.authenticate("bob", "failed")',
]


@pytest.mark.parametrize("text", POSITIONAL, ids=[t[:40] for t in POSITIONAL])
def test_a_password_in_its_place_among_positional_arguments_is_redacted(text: str) -> None:
    assert redact(text) == Redaction(
        text=text.replace(PW, "[REDACTED:password]"), labels=("password",)
    )


# Terraform's variable default under a credential's name, and JSON whose quotes are escaped.
ESCAPED_AND_HCL = [
    (
        f'variable "db_password" {{\n  type      = string\n  sensitive = true\n'
        f'  default   = "{PW}"\n}}',
        PW,
        "password",
    ),
    (f'variable "admin_token" {{ default = "{KEY}" }}', KEY, "token"),
    ('variable "db_password" {\n  default = "sunflower"\n}', "sunflower", "password"),
    (f"{{&quot;password&quot;:&quot;{PW}&quot;}}", PW, "password"),
    (f'<div data-config="{{&quot;apiKey&quot;:&quot;{KEY}&quot;}}">', KEY, "api_key"),
    (f"{{&#34;password&#34;: &#34;{PW2}&#34;}}", PW2, "password"),
    (f"{{\\u0022client_secret\\u0022:\\u0022{KEY}\\u0022}}", KEY, "secret"),
]
ESCAPED_AND_HCL_PROSE = [
    'variable "password_length" {\n  default = 16\n}',
    'variable "db_password" {\n  default = ""\n}',
    'variable "db_password" {\n  type = string\n}\nvariable "region" {\n  default = "us-east-1"\n}',
    "{&quot;name&quot;:&quot;Bob&quot;,&quot;token_count&quot;:&quot;12&quot;}",
    "{&quot;password&quot;:&quot;&quot;}",
    "{&quot;password&quot;:&quot;${DB_PASSWORD}&quot;}",
]


@pytest.mark.parametrize(("text", "secret", "label"), ESCAPED_AND_HCL)
def test_a_terraform_default_or_escaped_json_value_is_redacted(
    text: str, secret: str, label: str
) -> None:
    assert redact(text) == Redaction(
        text=text.replace(secret, f"[REDACTED:{label}]"), labels=(label,)
    )


@pytest.mark.parametrize("secret", ["8XHR5oc%qzeL", "%uxcQmplGN3p"])
def test_a_percent_sign_in_a_password_is_no_format_slot(secret: str) -> None:
    text = f'requests.get(url, auth=HTTPBasicAuth("svc", "{secret}"))'

    assert redact(text).text == text.replace(secret, "[REDACTED:password]")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("ALTER USER postgres PASSWORD 'Tr0ub4dor%ErpyE';", "Tr0ub4dor%ErpyE"),
        ("ALTER ROLE \"app\" PASSWORD 'Tr0ub4dor%ErpyE' VALID UNTIL '2026-01-01';", "Tr0ub4dor"),
    ],
)
def test_postgres_role_password_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "ALTER USER bob PASSWORD NULL;",
        "the user password policy",
        "ALTER USER bob VALID UNTIL 'infinity';",
    ],
)
def test_postgres_role_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


_SURVIVES: list[str] = [
    # code naming a credential without a literal survives
    *SOURCE_PROSE,
    # positional calls without a literal password survive
    *POSITIONAL_PROSE,
    # terraform and escaped json without a secret survive
    *ESCAPED_AND_HCL_PROSE,
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
