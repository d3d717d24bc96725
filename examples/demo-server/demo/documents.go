package demo

// defaultDocuments is never modified; DefaultDocuments hands out copies.
var defaultDocuments = map[string]string{
	"/docs/handbook.md": `# Acme Corp Employee Handbook

## Working hours
Core hours are 10:00-16:00 in your local time zone. Outside them, work when
it suits you and your team.

## Expenses
Submit receipts within 30 days. Anything over $500 needs your manager's
approval before you buy it.

## Security
Never share credentials by e-mail or chat. Report suspicious messages to
security@acme.example.
`,
	"/docs/onboarding.md": `# Onboarding checklist

1. Collect your laptop from IT.
2. Enrol in single sign-on and set up a hardware key.
3. Read the handbook (/docs/handbook.md).
4. Say hello in #general.
`,
	"/hr/salaries.csv": `employee_id,name,email,title,salary_usd,ssn
1001,Alice Johnson,alice.johnson@acme.example,Staff Engineer,212000,123-45-6789
1002,Bob Smith,bob.smith@acme.example,Product Manager,178500,987-65-4321
1003,Carol Diaz,carol.diaz@acme.example,Designer,151000,555-01-2345
1004,Dan Wu,dan.wu@acme.example,Head of Finance,240000,111-22-3333
`,
	"/ops/credentials.env": `# Production credentials. DO NOT SHARE.
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
DATABASE_URL=postgres://admin:hunter2@db.internal.acme.example:5432/prod
`,
}
