throw new Error('msgpackr-extract is stubbed: msgpackr uses its JavaScript decoder');
