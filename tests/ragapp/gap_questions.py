"""Questions the documentation does not answer, in groups of one meaning (known groups)."""

GROUPS = {
    "saml": [
        "How do I set up SAML single sign-on?",
        "Can I log in with SAML SSO?",
        "Is single sign-on through SAML supported?",
        "configure saml login",
    ],
    "helm": [
        "Is there a Helm chart for Kubernetes?",
        "How do I deploy it on Kubernetes with Helm?",
        "helm chart kubernetes install",
    ],
    "pricing": [
        "How much does a license cost?",
        "What is the price of the enterprise plan?",
        "pricing for a team license",
    ],
    "slack": [
        "Can the assistant answer in Slack?",
        "Is there a Slack integration?",
        "How do I connect it to Slack?",
    ],
    "backup": [
        "How do I back up the knowledge base?",
        "What is the backup procedure for the database?",
        "back up the database before an upgrade",
    ],
}
